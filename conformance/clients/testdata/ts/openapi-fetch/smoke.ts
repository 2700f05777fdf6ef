// Smoke program of the openapi-typescript + openapi-fetch client: every
// endpoint of the contract once (the training upload twice), a multipart
// upload from a Blob, and the error envelope of the failures.
// Run by clients_test.go as: node smoke.js BASE_URL TRAINING_CSV, with the
// server's bearer token in RAMANSERVE_TOKEN (and its name in RAMANSERVE_TOKEN_NAME).
import createClient from "openapi-fetch";
import type { components, paths } from "./schema";
import { args, bearerChallenge, sleep, Smoke } from "./common";

type TrainingMeta = components["schemas"]["TrainingMeta"];

// A recipe typed by the generated union: a Savitzky-Golay first
// derivative, then SNV, on two wavenumber regions.
const reviewRecipe: Pick<TrainingMeta, "preprocessing" | "regions"> = {
  preprocessing: [{ step: "savgol", window: 15, polyorder: 2, deriv: 1 }, { step: "snv" }],
  regions: [
    [600, 1800],
    [2800, 3100],
  ],
};

const { base, csv, token, tokenName } = args();
// openapi-typescript generates no security configuration: openapi-fetch
// sends the bearerAuth scheme's header from the client's headers.
const api = createClient<paths>({ baseUrl: base, headers: token ? { Authorization: `Bearer ${token}` } : {} });
const anonymous = createClient<paths>({ baseUrl: base });
const s = new Smoke();

// train uploads the CSV Blob, polls the job to its end and returns its id
// and the staged version ("" when it did not end done).
async function train(batch: string, options: Partial<TrainingMeta> = {}): Promise<{ job: string; version: string }> {
  const meta: TrainingMeta = { operator: "smoke", source_batches: [batch], ...options };
  const up = await api.POST("/training/start", {
    body: { csv, meta },
    bodySerializer(body) {
      const form = new FormData();
      form.append("meta", new Blob([JSON.stringify(body.meta)], { type: "application/json" }));
      form.append("csv", body.csv, "training.csv");
      return form;
    },
  });
  if (!s.call("POST /training/start", up.response.status, 202) || up.data === undefined) {
    return { job: "", version: "" };
  }
  const job = up.data.job_id;
  for (const deadline = Date.now() + 120_000; ; await sleep(100)) {
    const got = await api.GET("/training/{jobId}", { params: { path: { jobId: job } } });
    const status = got.data?.status;
    if (got.response.status !== 200 || status === "done" || status === "failed" || Date.now() > deadline) {
      s.call(`GET /training/{jobId}`, got.response.status, 200, `${status}`);
      if (status !== "done") {
        s.fail("GET /training/{jobId}", `job ended ${status}: ${JSON.stringify(got.data?.error ?? got.error)}`);
      }
      const result = got.data?.result;
      if (status === "done" && (!result?.component_selection || (result.cv_curve?.length ?? 0) < result.component_selection.components)) {
        s.fail("GET /training/{jobId}", `result without its component selection and CV curve: ${JSON.stringify(result)}`);
      }
      return { job, version: result?.new_version ?? "" };
    }
  }
}

async function main(): Promise<void> {
  if (token) {
    // Authentication is on: without the token, 401 and the challenge.
    const refused = await anonymous.GET("/model/list");
    s.call("GET /model/list (no token)", refused.response.status, 401, `${refused.error?.code}`);
    s.envelope("GET /model/list (no token)", refused.error, "UNAUTHORIZED", false);
    if (refused.response.headers.get("www-authenticate") !== bearerChallenge) {
      s.fail("GET /model/list (no token)", `WWW-Authenticate ${refused.response.headers.get("www-authenticate")}`);
    }
  }
  const health = await api.GET("/health");
  if (s.call("GET /health", health.response.status, 200, `${health.data?.status}`) && health.data?.status !== "ok") {
    s.fail("GET /health", `status ${health.data?.status}, want ok`);
  }

  const yaml = await api.GET("/openapi.yaml", { parseAs: "text" });
  if (s.call("GET /openapi.yaml", yaml.response.status, 200) && !yaml.data?.startsWith("openapi:")) {
    s.fail("GET /openapi.yaml", "not the contract");
  }
  const json = await api.GET("/openapi.json");
  const doc: unknown = json.data;
  if (s.call("GET /openapi.json", json.response.status, 200) && (typeof doc !== "object" || doc === null || !("openapi" in doc))) {
    s.fail("GET /openapi.json", "not the contract");
  }

  const noModel = await api.GET("/model/info");
  s.call("GET /model/info", noModel.response.status, 404, `${noModel.error?.code}`);
  s.envelope("GET /model/info", noModel.error, "MODEL_NOT_LOADED", false);

  const a = await train("smoke-a");
  const b = await train("smoke-b", reviewRecipe);

  const page1 = await api.GET("/training", { params: { query: { limit: 1 } } });
  s.call("GET /training", page1.response.status, 200, `${page1.data?.jobs.length} job(s)`);
  const cursor = page1.data?.next_cursor;
  if (page1.data?.jobs[0]?.job_id !== b.job || !cursor) {
    s.fail("GET /training", `first page ${JSON.stringify(page1.data)}, want job ${b.job} and a cursor`);
  } else {
    const page2 = await api.GET("/training", { params: { query: { limit: 1, cursor } } });
    s.call("GET /training?cursor", page2.response.status, 200, `${page2.data?.jobs.length} job(s)`);
    if (page2.data?.jobs[0]?.job_id !== a.job) {
      s.fail("GET /training?cursor", `second page ${JSON.stringify(page2.data)}, want job ${a.job}`);
    }
  }

  const list = await api.GET("/model/list");
  if (s.call("GET /model/list", list.response.status, 200, `${list.data?.models.length} model(s)`) && list.data?.models.length !== 2) {
    s.fail("GET /model/list", `${list.data?.models.length} models, want 2`);
  }

  const detail = await api.GET("/model/{version}", { params: { path: { version: a.version } } });
  s.call("GET /model/{version}", detail.response.status, 200, `${detail.data?.status}`);
  if (detail.data !== undefined && (detail.data.lineage?.operator !== "smoke" || detail.data.lineage?.authenticated_as !== tokenName)) {
    s.fail("GET /model/{version}", `lineage ${JSON.stringify(detail.data.lineage)}, want operator smoke, authenticated_as ${tokenName}`);
  }

  const withRecipe = await api.GET("/model/{version}", { params: { path: { version: b.version } } });
  s.call("GET /model/{version} (recipe)", withRecipe.response.status, 200, `${withRecipe.data?.preprocessing?.length} step(s)`);
  const first = withRecipe.data?.preprocessing?.[0];
  if (first?.step !== "savgol" || first.window !== 15 || withRecipe.data?.regions?.length !== 2) {
    s.fail("GET /model/{version} (recipe)", `recipe and regions not reported: ${JSON.stringify(withRecipe.data)}`);
  }

  const report = await api.GET("/model/{version}/report", { params: { path: { version: b.version } }, parseAs: "text" });
  const page: unknown = report.data;
  if (
    s.call("GET /model/{version}/report", report.response.status, 200, `${report.response.headers.get("content-type")}`) &&
    (typeof page !== "string" || !page.includes("<svg"))
  ) {
    s.fail("GET /model/{version}/report", "not an HTML page with plots");
  }

  // source left out: the generated type keeps it optional.
  const load = await api.POST("/model/load", { body: { version: a.version } });
  if (s.call("POST /model/load", load.response.status, 200, `${load.data?.loaded_version}`) && load.data?.loaded_version !== a.version) {
    s.fail("POST /model/load", `loaded ${load.data?.loaded_version}, want ${a.version}`);
  }

  const info = await api.GET("/model/info");
  if (s.call("GET /model/info", info.response.status, 200, `${info.data?.active_version}`) && info.data?.active_version !== a.version) {
    s.fail("GET /model/info", `active ${info.data?.active_version}, want ${a.version}`);
  }

  const active = await api.DELETE("/model/{version}", { params: { path: { version: a.version } } });
  s.call("DELETE /model/{version} (active)", active.response.status, 409, `${active.error?.code}`);
  s.envelope("DELETE /model/{version}", active.error, "MODEL_ACTIVE", false);

  const del = await api.DELETE("/model/{version}", { params: { path: { version: b.version } } });
  s.call("DELETE /model/{version}", del.response.status, 204);

  const gone = await api.GET("/model/{version}", { params: { path: { version: b.version } } });
  s.call("GET /model/{version} (deleted)", gone.response.status, 404, `${gone.error?.code}`);
  s.envelope("GET /model/{version}", gone.error, "MODEL_NOT_FOUND", false);

  const orphan = await api.GET("/training/{jobId}/report", { params: { path: { jobId: b.job } } });
  s.call("GET /training/{jobId}/report (model deleted)", orphan.response.status, 404, `${orphan.error?.code}`);
  s.envelope("GET /training/{jobId}/report", orphan.error, "MODEL_NOT_FOUND", false);

  const jobReport = await api.GET("/training/{jobId}/report", { params: { path: { jobId: a.job } }, parseAs: "text" });
  const jobPage: unknown = jobReport.data;
  if (s.call("GET /training/{jobId}/report", jobReport.response.status, 200) && (typeof jobPage !== "string" || !jobPage.includes("<svg"))) {
    s.fail("GET /training/{jobId}/report", "no plot");
  }

  const finished = await api.POST("/training/{jobId}/cancel", { params: { path: { jobId: a.job } } });
  s.call("POST /training/{jobId}/cancel (done)", finished.response.status, 409, `${finished.error?.code}`);
  s.envelope("POST /training/{jobId}/cancel", finished.error, "JOB_FINISHED", false);

  const unknown = await api.POST("/training/{jobId}/cancel", { params: { path: { jobId: "no-such-job" } } });
  s.call("POST /training/{jobId}/cancel (unknown)", unknown.response.status, 404, `${unknown.error?.code}`);
  s.envelope("POST /training/{jobId}/cancel", unknown.error, "JOB_NOT_FOUND", false);
}

main()
  .catch((err: unknown) => s.fail("smoke", String(err)))
  .finally(() => s.finish());
