// Smoke test of the package against a real server: node smoke.js BASE_URL
// TRAINING_CSV, with the server's operate token in RAMANSERVE_TOKEN.
// Prints one line per call and closes with "smoke: N calls, N errors".
import { readFile } from "node:fs/promises";
import { ApiError, createConsoleClient, startTraining, unwrap } from "../src/index.js";

const [base, csvPath] = process.argv.slice(2);
if (!base || !csvPath) {
  console.error("usage: node smoke.js BASE_URL TRAINING_CSV");
  process.exit(2);
}
const api = createConsoleClient({ baseUrl: base, token: process.env.RAMANSERVE_TOKEN });
let calls = 0;
let errors = 0;

function check(what: string, ok: boolean, detail: string): void {
  calls++;
  if (!ok) {
    errors++;
  }
  console.log(`${ok ? "ok" : "FAIL"} ${what}: ${detail}`);
}

async function refused(what: string, call: () => Promise<unknown>, status: number, code: string): Promise<void> {
  try {
    await call();
    check(what, false, `succeeded, want ${status} ${code}`);
  } catch (e) {
    const ok = e instanceof ApiError && e.status === status && e.code === code && !e.retryable;
    check(what, ok, e instanceof ApiError ? `${e.status} ${e.code}` : `${e}`);
  }
}

async function main(): Promise<void> {
  const anonymous = createConsoleClient({ baseUrl: base });
  await refused("GET /model/list without the token", async () => unwrap(await anonymous.GET("/model/list")), 401, "UNAUTHORIZED");

  const health = unwrap(await api.GET("/health"));
  check("GET /health", health.status === "ok", health.status);

  await refused("GET /model/{version}/axis (unknown)", async () =>
    unwrap(await api.GET("/model/{version}/axis", { params: { path: { version: "no-such-version" } } })), 404, "MODEL_NOT_FOUND");

  const csv = new Blob([await readFile(csvPath)], { type: "text/csv" });
  // The refusal is about the metadata, so a small CSV does: the server
  // answers before it reads a large one, and on a busy machine closing
  // the connection under a client still sending can cost the answer.
  const smallCSV = new Blob(["scan_id,EPA\n"], { type: "text/csv" });
  await refused("POST /training/start (empty operator)", async () => unwrap(await startTraining(api, smallCSV, { operator: "" })), 400, "INVALID_METADATA");

  const accepted = unwrap(await startTraining(api, csv, { operator: "ts-smoke", source_batches: ["B-ts"] }));
  check("POST /training/start", accepted.job_id !== "", accepted.job_id);

  let version = "";
  for (const deadline = Date.now() + 120_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
    const job = unwrap(await api.GET("/training/{jobId}", { params: { path: { jobId: accepted.job_id } } }));
    if (job.status === "done" || job.status === "failed") {
      version = job.result?.new_version ?? "";
      check("GET /training/{jobId}", job.status === "done" && version !== "", `${job.status} ${version}`);
      break;
    }
  }
  if (version === "") {
    check("training", false, "no staged version within 120 s");
    return;
  }

  const loaded = unwrap(await api.POST("/model/load", { body: { version, source: "staged" } }));
  check("POST /model/load", loaded.loaded_version === version, loaded.loaded_version);
  const info = unwrap(await api.GET("/model/info"));
  check("GET /model/info", info.active_version === version, info.active_version);

  const axis = unwrap(await api.GET("/model/{version}/axis", { params: { path: { version } } }));
  const wn = axis.wavenumbers;
  check(
    "GET /model/{version}/axis",
    axis.version === version && wn.length === info.wavenumber_count && wn[0] === info.wavenumber_range?.[0] && wn[wn.length - 1] === info.wavenumber_range?.[1],
    `${wn.length} wavenumbers, ${wn[0]} to ${wn[wn.length - 1]} cm-1`,
  );
}

main()
  .catch((e: unknown) => check("smoke", false, `${e}`))
  .finally(() => {
    console.log(`smoke: ${calls} calls, ${errors} errors`);
    process.exitCode = errors === 0 ? 0 : 1;
  });
