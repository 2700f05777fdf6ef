// The bookkeeping both TypeScript smoke programs share: one line per call,
// a closing "smoke: N calls, M errors" line, and the error-envelope check.
import { readFileSync } from "node:fs";

/** The error envelope every failing response carries (ErrorResponse). */
export interface Envelope {
  code: string;
  message: string;
  retryable?: boolean;
}

/**
 * The arguments the Go test driver passes: the server's base URL and a
 * training CSV; and, in the environment, the bearer token of a server run
 * with -auth-tokens (RAMANSERVE_TOKEN) and that token's name
 * (RAMANSERVE_TOKEN_NAME), which the server records as authenticated_as.
 */
export function args(): { base: string; csv: Blob; token?: string; tokenName?: string } {
  const [base, csvPath] = process.argv.slice(2);
  if (!base || !csvPath) {
    throw new Error("usage: [RAMANSERVE_TOKEN=... RAMANSERVE_TOKEN_NAME=...] node smoke.js BASE_URL TRAINING_CSV");
  }
  return {
    base,
    csv: new Blob([readFileSync(csvPath)], { type: "text/csv" }),
    token: process.env.RAMANSERVE_TOKEN || undefined,
    tokenName: process.env.RAMANSERVE_TOKEN_NAME || undefined,
  };
}

/** The challenge of a 401 (WWW-Authenticate) when no token was sent. */
export const bearerChallenge = 'Bearer realm="ramanserve"';

export class Smoke {
  calls = 0;
  errors = 0;

  /** Counts one call and prints its line; a status other than want is an error. */
  call(label: string, status: number, want: number, detail = ""): boolean {
    this.calls++;
    const ok = status === want;
    if (!ok) {
      this.errors++;
    }
    console.log(`${label} -> ${status}${ok ? "" : ` (want ${want})`}${detail ? ` ${detail}` : ""}`);
    return ok;
  }

  /** Counts a failed check on the answer of a call already counted. */
  fail(label: string, why: string): void {
    this.errors++;
    console.log(`${label}: ${why}`);
  }

  /**
   * Checks the error envelope of a failing call: the code the contract
   * names, a message, and retryable a boolean with the expected value.
   */
  envelope(label: string, body: Envelope | undefined, code: string, retryable: boolean): void {
    if (body === undefined) {
      this.fail(label, "no error envelope");
      return;
    }
    if (body.code !== code || body.message === "" || body.retryable !== retryable) {
      this.fail(label, `envelope ${JSON.stringify(body)}, want code ${code}, a message, retryable ${retryable}`);
    }
  }

  /** Prints the closing line and sets the exit code. */
  finish(): void {
    console.log(`smoke: ${this.calls} calls, ${this.errors} errors`);
    process.exitCode = this.errors === 0 ? 0 : 1;
  }
}

/** Waits before the next poll of a training job. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
