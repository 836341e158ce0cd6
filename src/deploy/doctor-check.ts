// One doctor line: what every doctor module (doctor.ts, doctor-gate.ts) adds.
export type CheckStatus = "pass" | "warn" | "fail";

export interface DoctorCheck {
  check: string;
  status: CheckStatus;
  message: string;
  /** The command (or action) that fixes a warn or fail. */
  fix?: string;
}

export function check(checks: DoctorCheck[], name: string, status: CheckStatus, message: string, fix?: string): void {
  checks.push({ check: name, status, message, ...(fix ? { fix } : {}) });
}
