// countersvc's client for TypeScript and JavaScript: see README.md.
export { CountersClient, BY_NAME } from "./client.js";
export type {
  ClientOptions,
  CallOptions,
  WriteOptions,
  IncrementOptions,
  SetOptions,
  ListOptions,
  HistoryOptions,
  BreakdownOptions,
  ExportOptions,
  ImportBody,
  ImportOptions,
  WatchOptions,
  DeliveriesOptions,
} from "./client.js";
export { CountersError } from "./errors.js";
export type { ErrorCode } from "./errors.js";
export type * from "./types.js";
