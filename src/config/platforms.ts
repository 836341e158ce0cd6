// Upload limits of the platforms a Hermes gateway delivers to. The figures are
// what each platform documents; operators can override any of them in the
// config file (`platforms`), because they change (Discord's has, several times).

export type MediaCategory = "image" | "video" | "audio" | "document";
export type PlatformLimits = Record<MediaCategory, number>;

const MB = 1_000_000;
const MiB = 1024 * 1024;

const all = (bytes: number): PlatformLimits => ({ image: bytes, video: bytes, audio: bytes, document: bytes });

export const PLATFORM_LIMITS = {
  // Telegram Bot API, sendPhoto: "The photo must be at most 10 MB";
  // sendDocument/sendVideo/sendAudio: "up to 50 MB" (core.telegram.org/bots/api).
  telegram: { image: 10 * MB, video: 50 * MB, audio: 50 * MB, document: 50 * MB },
  // Discord: the free-tier attachment limit has moved between 8, 25 and 10 MiB;
  // 10 MiB is the current non-Nitro, unboosted figure. Raise it in config for
  // boosted servers.
  discord: all(10 * MiB),
  // Slack files.upload / files.getUploadURLExternal: files up to 1 GB
  // (slack.com/help "Upload files to Slack").
  slack: all(1000 * MB),
  // WhatsApp Cloud API, supported media types: images 5 MB, video and audio
  // 16 MB, documents 100 MB (developers.facebook.com/docs/whatsapp/cloud-api).
  whatsapp: { image: 5 * MB, video: 16 * MB, audio: 16 * MB, document: 100 * MB },
  // Signal: attachments up to 100 MB (support.signal.org).
  signal: all(100 * MB),
  // Matrix: set by the homeserver (Synapse max_upload_size); 100 MB is what
  // public homeservers allow in practice. Lower it to match your server.
  matrix: all(100 * MB),
  // LINE Messaging API: images up to 10 MB, video and audio up to 200 MB
  // (developers.line.biz, message types); LINE sends no generic documents.
  line: { image: 10 * MB, video: 200 * MB, audio: 200 * MB, document: 200 * MB },
} satisfies Record<string, PlatformLimits>;

export type PlatformName = keyof typeof PLATFORM_LIMITS;

export const PLATFORM_NAMES = Object.keys(PLATFORM_LIMITS) as PlatformName[];

export function isPlatformName(name: string): name is PlatformName {
  return Object.hasOwn(PLATFORM_LIMITS, name);
}

const CATEGORY_BY_EXTENSION: Record<string, MediaCategory> = {
  png: "image",
  jpg: "image",
  jpeg: "image",
  gif: "image",
  webp: "image",
  bmp: "image",
  tiff: "image",
  svg: "image",
  mp4: "video",
  mov: "video",
  avi: "video",
  mkv: "video",
  webm: "video",
  mp3: "audio",
  wav: "audio",
  ogg: "audio",
  opus: "audio",
  m4a: "audio",
  flac: "audio",
};

export function categoryOf(ext: string): MediaCategory {
  return CATEGORY_BY_EXTENSION[ext] ?? "document";
}
