// A typed client of ramanserve's management API for consoles: the
// contract's types (schema.ts, generated from api/openapi.yaml), an
// openapi-fetch client over them, the training upload's multipart form,
// and the error envelope as an exception.
import createClient, { type Client, type ClientOptions } from "openapi-fetch";
import type { components, paths } from "./schema.js";

export type { components, operations, paths } from "./schema.js";

export type Schemas = components["schemas"];
export type TrainingMeta = Schemas["TrainingMeta"];
export type ErrorResponse = Schemas["ErrorResponse"];
export type ConsoleClient = Client<paths>;

export interface ConsoleOptions {
  /** The management channel, for example "http://ramanserve.plant:5556". */
  baseUrl: string;
  /** A bearer token (docs/operations.md); sent on every request. */
  token?: string;
  /** Extra headers sent on every request. */
  headers?: Record<string, string>;
  /** A fetch of your own (tests, proxies); the global fetch otherwise. */
  fetch?: ClientOptions["fetch"];
}

/** An openapi-fetch client typed by the contract: every path, parameter,
 * body and response as api/openapi.yaml defines it. */
export function createConsoleClient(opts: ConsoleOptions): ConsoleClient {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) {
    headers.Authorization = `Bearer ${opts.token}`;
  }
  return createClient<paths>({ baseUrl: opts.baseUrl.replace(/\/+$/, ""), headers, fetch: opts.fetch });
}

/** The body of POST /training/start: `meta` as an application/json part,
 * then `csv` as a file part. meta comes first so that the server checks
 * it before it reads a large CSV. */
export function trainingForm(csv: Blob, meta: TrainingMeta, filename = "training.csv"): FormData {
  const form = new FormData();
  form.append("meta", new Blob([JSON.stringify(meta)], { type: "application/json" }));
  form.append("csv", csv, filename);
  return form;
}

/** Uploads a training set (POST /training/start) as the multipart form
 * the contract defines. The answer is openapi-fetch's: data (202,
 * { job_id, ... }) or error (the envelope) with the response. */
export function startTraining(api: ConsoleClient, csv: Blob, meta: TrainingMeta, signal?: AbortSignal) {
  return api.POST("/training/start", {
    body: { csv, meta },
    bodySerializer: (body) => trainingForm(body.csv, body.meta),
    signal,
  });
}

/** A failed call: the HTTP status, the contract's error envelope (code,
 * message, retryable) and Retry-After in seconds when the server sent
 * one. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly retryable: boolean;
  readonly retryAfter?: number;

  constructor(status: number, envelope: ErrorResponse | undefined, retryAfter?: number) {
    super(envelope ? `${status} ${envelope.code}: ${envelope.message}` : `HTTP ${status} without the error envelope`);
    this.name = "ApiError";
    this.status = status;
    this.code = envelope?.code ?? `HTTP_${status}`;
    this.retryable = envelope?.retryable ?? false;
    this.retryAfter = retryAfter;
  }
}

/** The data of a successful openapi-fetch answer, or ApiError. */
export function unwrap<T>(res: { data?: T; error?: unknown; response: Response }): T {
  if (res.response.ok && res.error === undefined) {
    return res.data as T;
  }
  const header = res.response.headers.get("retry-after");
  const retryAfter = header !== null && /^\d+$/.test(header) ? Number(header) : undefined;
  throw new ApiError(res.response.status, isEnvelope(res.error) ? res.error : undefined, retryAfter);
}

function isEnvelope(v: unknown): v is ErrorResponse {
  return typeof v === "object" && v !== null && typeof (v as ErrorResponse).code === "string" && typeof (v as ErrorResponse).message === "string";
}
