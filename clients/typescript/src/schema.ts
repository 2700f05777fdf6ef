// Generated from api/openapi.yaml by scripts/generate.mjs (npm run generate). Do not edit.

export interface paths {
    "/model/load": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Make a model version active (hot swap)
         * @description **Role** (with `-auth-tokens`): `operate`.
         *
         *     Loads a model and makes it active atomically. A `predict` already in
         *     flight finishes on the previous model; the next one uses the new model.
         *
         *     * `staged` promotes a staged version; `archived` re-activates an
         *       archived version; `file` imports a scikit-learn `.joblib` file from
         *       `path` into the registry under the name `version` and activates it.
         *     * After a successful swap the previously active version becomes
         *       `archived`.
         *     * After any failed load the previous model stays active and serving,
         *       and the registry is unchanged.
         *     * Only one load runs at a time. A second load gets 409
         *       `LOAD_IN_PROGRESS` with `retryable: true` and `Retry-After: 1`.
         *     * `load_time_ms` is measured end to end on the server, from the
         *       request being accepted to the swap being durable on disk.
         *     * `previous_version` is the empty string when no model was active.
         *     * Preconditions, for consoles that promote what an operator saw:
         *       `If-Match` with the `ETag` of `GET /model/list` (or any model
         *       route) loads only if the registry has not changed since, and
         *       `expected_active` in the body only if that version is still the
         *       active one. Either is checked under the load's lock, so of two
         *       consoles promoting from the same list one succeeds and the other
         *       gets 412 `PRECONDITION_FAILED`, whose message names the version
         *       active now. Without either, a load goes ahead whatever changed.
         */
        post: operations["loadModel"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/model/list": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List every model in the registry
         * @description **Role** (with `-auth-tokens`): `read`.
         *
         *     Models are sorted by `trained_at`, newest first; ties are broken by
         *     version name. A `.npz` or `.joblib` file found in the registry's
         *     `models/` folder without an entry (copied in by hand, or written just
         *     before a crash) is read at start-up and listed as `archived`, its
         *     version being the file name without extension (or a free name derived
         *     from it); a file that cannot be read is moved to `quarantine/` instead
         *     (see `GET /health`). The server deletes a model file only when its
         *     version is deleted (`DELETE /model/{version}`).
         */
        get: operations["listModels"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/model/info": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Metadata of the active model
         * @description **Role** (with `-auth-tokens`): `read`.
         *
         *     When no model is loaded the answer is 404 with code `MODEL_NOT_LOADED`
         *     (ModelInfo has required fields that cannot be filled without a model).
         */
        get: operations["getModelInfo"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/model/{version}": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description A registry version. `load`, `list`, `info` and `shadow` name the routes
                 *     above; the registry gives no model those names (a file adopted
                 *     under one of them is listed as `<name>-1`, and an import under
                 *     one is 400 `INVALID_REQUEST`), so `GET /model/load` or
                 *     `DELETE /model/list` is 405 `METHOD_NOT_ALLOWED` with `Allow`.
                 */
                version: components["schemas"]["Version"];
            };
            cookie?: never;
        };
        /**
         * One model version, with its lineage, metrics and checksum
         * @description **Role** (with `-auth-tokens`): `read`.
         */
        get: operations["getModel"];
        put?: never;
        post?: never;
        /**
         * Remove a staged or archived version from the registry and its disk
         * @description **Role** (with `-auth-tokens`): `operate`.
         *
         *     Removes the entry from the index first (durably), then the model
         *     file the registry holds for it in `models/`. The file a `file` load
         *     was imported from is never touched. The active version cannot be
         *     deleted: activate another first. A delete takes the same lock as a
         *     load, so it never races a swap; while a load runs the answer is 409
         *     `LOAD_IN_PROGRESS`. A version is not deleted while a re-scoring job
         *     of it is queued or running (409 `MODEL_BUSY`): the job would write
         *     records for a version that no longer exists. A re-scoring posted
         *     while the version is being deleted waits for the delete, then finds
         *     the version gone (`MODEL_NOT_FOUND`). A training job whose result names a deleted
         *     version keeps that name in its record. The index is the commit
         *     point: if the process dies after writing it but before the file is
         *     gone, the next start removes the file (when it still has the
         *     recorded size and SHA-256) instead of listing it again as archived.
         *     Only those bytes are removed: a file replaced by hand since it was
         *     recorded (or a link put in its place) is left where it is, and the
         *     next start lists it as archived.
         */
        delete: operations["deleteModel"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/model/{version}/axis": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                version: components["schemas"]["Version"];
            };
            cookie?: never;
        };
        /**
         * The wavenumbers a version expects, one per point of a spectrum
         * @description **Role** (with `-auth-tokens`): `read`.
         *
         *     The model's axis in cm-1, in order: a spectrum for this version has
         *     exactly these wavenumbers (each within the 0.5 cm-1 axis tolerance,
         *     `messages.md` section 9). A client checks its spectra against it
         *     before sending them; the prediction channel's `model_info` gives the
         *     active model's axis when asked (`body.include: ["wavenumbers"]`).
         *     Any other version than the active one is read from its file, so
         *     the route, whatever the version, shares the review pages' slots:
         *     when none is free within 5 s the answer is 503 `SERVER_BUSY`
         *     (`retryable: true`, `Retry-After: 5`). The route names beside
         *     /model/{version} are never versions: 404 `MODEL_NOT_FOUND` like any
         *     name the registry does not hold.
         */
        get: operations["getModelAxis"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/model/{version}/report": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                version: components["schemas"]["Version"];
            };
            cookie?: never;
        };
        /**
         * The model's review page, one self-contained HTML document
         * @description **Role** (with `-auth-tokens`): `read`.
         *
         *     A page for people deciding whether to promote the version. It holds
         *     inline SVG plots and nothing fetched from elsewhere (no script,
         *     style sheet, font or image from another URL), so it can be saved,
         *     mailed and archived as one file. For a model trained here it shows:
         *     the cross-validation curve per analyte with the chosen component
         *     count marked; measured against cross-validated predicted per analyte
         *     with the 1:1 line; the residuals; the regression vector per analyte
         *     over the wavenumber axis with the excluded regions shaded; T2
         *     against Q of the training spectra with the 95 % limits and the
         *     outliers labelled; the lineage and the preprocessing recipe; and
         *     the review at SIMCA depth (the numbers of
         *     `GET /model/{version}/review`): RMSEC beside RMSECV in the summary,
         *     the CV curve on a log axis, a table per component (R2X, R2X
         *     cumulative, R2Y and Q2 per analyte), VIP per wavenumber with the
         *     1.0 line, the scores of any two components (`scores_x` and
         *     `scores_y`, t1 against t2 unless asked) with the 95 % Hotelling T2
         *     ellipse of those two, coloured by the measured concentration of an
         *     analyte (`scores_color`, the first analyte unless asked; files that
         *     keep `review_scores`, models of two or more components), the X
         *     weights and X loadings of the first three components over the
         *     wavenumber axis with the excluded regions shaded, the mean and a
         *     few training spectra as uploaded and after the recipe (files that
         *     keep `review_spectra`), and per analyte
         *     the influence plot (leverage against studentised residual, limits
         *     3 (A+1)/n and ±3). A component beyond the model's count, or the
         *     same component twice, is 400 `INVALID_REQUEST`. The
         *     figures come from the model file itself (see `artifact.md`), so the
         *     page can be rebuilt as long as the version exists. An imported or
         *     adopted model has no cross-validation record: its page shows the
         *     regression vectors, the recipe and the lineage, and says what is
         *     missing.
         *
         *     Two pages or performance reports are computed at once; a request
         *     that cannot get a slot within 5 s is answered 503 `SERVER_BUSY`
         *     (`retryable: true`, `Retry-After: 5`), as `GET
         *     /model/{version}/performance` is.
         */
        get: operations["getModelReport"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/model/{version}/review": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                version: components["schemas"]["Version"];
            };
            cookie?: never;
        };
        /**
         * Every number behind the review page's figures, as JSON
         * @description **Role** (with `-auth-tokens`): `read`.
         *
         *     The review at SIMCA depth, computed from the model file alone (see
         *     `artifact.md`), so it exists as long as the version does. Notation:
         *     n training rows, p variables the model uses (the axis points inside
         *     its regions, after the preprocessing recipe), q analytes, A
         *     components; X the training spectra as the model sees them
         *     (preprocessed, region-selected, centred, and scaled when trained
         *     with `autoscale`); T = X R the scores, W the NIPALS weights, P the
         *     X loadings, c_ka the Y loading of analyte k on component a, in g/L.
         *
         *     * `vip` (p, in axis order, beside `wavenumbers`): variable importance
         *       in the projection (Wold, Johansson & Cocchi 1993; Chong & Jun,
         *       Chemometr. Intell. Lab. Syst. 78 (2005) 103-112),
         *       `VIP_j = sqrt(p * sum_a SS_a (w_ja/||w_a||)^2 / sum_a SS_a)` with
         *       `SS_a = sum_k (c_ka/s_k)^2 t_a't_a`, the Y variance component a
         *       explains with every analyte at unit variance (`s_k` the standard
         *       deviation, ddof 1, of analyte k's training labels), as SIMCA's
         *       default unit-variance Y. The mean of VIP^2 is 1: variables above
         *       1 matter more than average.
         *     * `components` (A): for the model truncated to `components`
         *       components, `r2x` = `t_a't_a ||p_a||^2 / ||X||^2` (this component
         *       alone) and `r2x_cumulative`; `r2y` per analyte, cumulative,
         *       `1 - sum_i (y_ik - yhat_ik)^2 / sum_i (y_ik - mean_k)^2` of the fit
         *       with that many components; `q2` per analyte,
         *       `1 - PRESS/SS_Y` of the pooled out-of-fold predictions of
         *       training's K-fold cross-validation (the folds and segments in
         *       `selection`; each fold centred and scaled on its own rows; SS_Y
         *       about the mean of all n labels), the same as the CV curve's R2.
         *     * `x_weights` and `x_loadings` (A, each p): the weights w_a and the
         *       X loadings p_a of each component over `wavenumbers`, as the fit
         *       made them (R = W (P'W)^-1; the weights of unit length).
         *     * `leverage` (n, training order): `h_i = 1/n + t_i' (T'T)^-1 t_i`,
         *       the intercept's share included (the convention of the
         *       studentised residuals on the page).
         *     * `rmsec` (`sqrt(SS_res/n)` of the fit with A components) beside
         *       `rmsecv`.
         *     * `scores` (n, each A): the training rows' X scores T, the scores
         *       plot's numbers; `spectra`: the few training spectra the file keeps
         *       (`rows`), as uploaded (`raw`, the mean first) and after the recipe
         *       (`preprocessed`, `x_mean` first), the spectra plots' numbers. Both
         *       are absent for a model file written before it kept them.
         *
         *     The route names beside /model/{version} are never versions: 404
         *     `MODEL_NOT_FOUND` like any name the registry does not hold. An
         *     imported or adopted model has no record of its training: 409
         *     `NO_TRAINING_RECORD`.
         */
        get: operations["getModelReview"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/model/{version}/export": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                version: components["schemas"]["Version"];
            };
            cookie?: never;
        };
        /**
         * The model as a file to take elsewhere, a scikit-learn Pipeline or its artifact
         * @description **Role** (with `-auth-tokens`): `read`.
         *
         *     Any version, whatever its status, without activating it.
         *
         *     * `format=joblib` (the default): a scikit-learn `Pipeline` saved
         *       as joblib saves it, which `joblib.load` reads in Python with the
         *       helper module `examples/python/ramanserve_preprocessing.py`
         *       importable as `ramanserve_preprocessing`: the recipe as
         *       `FunctionTransformer` steps (`scipy.signal.savgol_filter` and
         *       the helper module's functions), the regions as one
         *       `FunctionTransformer` of `select_regions`, a `StandardScaler` when
         *       the model scales its variables, and a fitted `PLSRegression`. Its
         *       `predict` gives this server's concentrations to 1e-9 g/L (1e-6
         *       through `als_baseline`). The file is written by the server's own
         *       pickle writer and holds only the classes and functions the
         *       importer accepts (`sklearn-import.md`), so `POST /model/load`
         *       with `source: file` imports it again as the same model.
         *     * `format=npz`: the model's artifact (`artifact.md`): the file the
         *       registry keeps, byte for byte, for a model trained here; for an
         *       imported model, its parameters written as an artifact.
         *
         *     `sklearn-import.md` (section "Exporting a model") says what each
         *     attribute holds. An export reads the whole model file: it shares
         *     the two report slots of the review pages (503 `SERVER_BUSY` after
         *     5 s, `retryable: true`, `Retry-After: 5`).
         */
        get: operations["exportModel"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/model/shadow": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The shadow model and how it compares with the active one
         * @description **Role** (with `-auth-tokens`): `read`.
         *
         *     The shadow is a staged or archived version that scores every
         *     spectrum the active model scores, off the reply path: the rig's reply
         *     and its latency are those of the active model alone. Both outputs go
         *     to the prediction log with the same `prediction_id`. `comparison`
         *     covers the predicts scored by both since the shadow was set: n, the
         *     mean of shadow minus active, the root-mean-square difference, and the
         *     share of spectra where the two differ by more than the analyte's
         *     tolerance (the active model's, as in the confidence). `version` is
         *     null when no shadow is set. The shadow survives a restart; a swap
         *     that makes the shadow active clears it, and so does deleting its
         *     version. When the recorded shadow could not be opened again at
         *     start-up, `version` names it without `since` and `comparison`
         *     (`GET /health` says why) until it is set again or cleared.
         */
        get: operations["getShadow"];
        /**
         * Make a staged or archived version the shadow
         * @description **Role** (with `-auth-tokens`): `operate`.
         *
         *     Replaces any previous shadow (its comparison starts again from zero).
         *     The version is loaded and checked as a load would check it; the
         *     active model is not touched.
         */
        put: operations["setShadow"];
        post?: never;
        /**
         * Stop shadow scoring
         * @description **Role** (with `-auth-tokens`): `operate`.
         *
         *     Idempotent; the records already logged stay. A shadow that failed to
         *     restore at start-up (named by `GET /model/shadow` without a
         *     comparison, and by `GET /health`) is cleared the same way.
         */
        delete: operations["clearShadow"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/model/{version}/performance": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                version: components["schemas"]["Version"];
            };
            cookie?: never;
        };
        /**
         * The version's error against the lab, with the other models on the same spectra
         * @description **Role** (with `-auth-tokens`): `read`.
         *
         *     Over the lab results matched to predictions of this version (as
         *     active, shadow or re-scored) whose spectra were taken in
         *     [`since`, `until`): per analyte n, RMSEP, bias (mean of predicted
         *     minus lab), and the slope and intercept of lab regressed on
         *     predicted (ordinary least squares); the same for every other version
         *     that scored those spectra; and the bias per batch in time order, for
         *     a control chart. Absent `since` means from the oldest logged
         *     prediction, absent `until` means now. A statistic that n does not
         *     support (RMSEP and bias need n >= 1, slope and intercept n >= 2 and
         *     predictions that are not all equal) is absent.
         *
         *     Two reports are computed at once (this route shares its slots with
         *     the review pages, `GET /model/{version}/report` and `GET
         *     /training/{jobId}/report`). A request that finds them taken waits
         *     for one at most 5 s, then is answered 503 `SERVER_BUSY`
         *     (`retryable: true`, `Retry-After: 5`) instead of holding its
         *     management connection while the reports ahead of it run.
         */
        get: operations["getModelPerformance"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/model/{version}/rescore": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                version: components["schemas"]["Version"];
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Score a staged or archived version on logged spectra, as a background job
         * @description **Role** (with `-auth-tokens`): `operate`.
         *
         *     Needs the server to run with `-log-spectra`. The job runs in the
         *     training queue (same slots, progress, cancel and status URL as a
         *     training job; `kind` is `rescore`). Its records join the prediction
         *     log with role `rescore`, and so the performance statistics.
         */
        post: operations["rescoreModel"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/lab-results": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Reconcile the lab's HPLC results with logged predictions
         * @description **Role** (with `-auth-tokens`): `operate`.
         *
         *     A JSON array of `LabResult`, or CSV (`text/csv`, RFC 4180) whose
         *     header names the columns, in any order, from `lab_sample_id`,
         *     `batch_id`, `scan_seq`, `sampled_at`, `EPA`, `DHA`, `DPA`:
         *     `lab_sample_id` and `batch_id` are required columns, as are at least
         *     one of `scan_seq`, `sampled_at` and at least one analyte; an empty
         *     cell is an absent value, and any other column is refused. For
         *     example:
         *
         *         lab_sample_id,batch_id,scan_seq,sampled_at,EPA,DHA,DPA
         *         HPLC-2291,B-17,1042,,181.5,92.0,
         *         HPLC-2292,B-17,,2026-11-23T08:15:00Z,,,20.1
         *
         *     Each record is matched to one logged active prediction of its batch:
         *     by `scan_seq` when given (the latest, if the rig reused the number),
         *     otherwise the prediction nearest `sampled_at` within
         *     `-lab-match-window` (default 60 s) either side. Every record is
         *     kept, one per `lab_sample_id`: posting a `lab_sample_id` again
         *     replaces its earlier result (counted in `replaced`, never twice in a
         *     statistic), so posting the same file twice changes nothing.
         *     Records that cannot be matched are listed with their reason; they
         *     are kept (a corrected re-post replaces them) but count in no
         *     statistic. A record that cannot be parsed refuses the whole post,
         *     and nothing is stored. At most 10,000 records and 4 MiB per post.
         *     The server takes two posts at a time (each stored whole or not at
         *     all); a further post waits for one of them to finish.
         */
        post: operations["postLabResults"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/predictions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Export the prediction log
         * @description **Role** (with `-auth-tokens`): `read`.
         *
         *     Oldest first. JSON by default; `Accept: text/csv` gives the same rows
         *     as CSV with a header line (spectra are never exported). Every filter
         *     is optional; [`since`, `until`) bounds the prediction time.
         */
        get: operations["listPredictions"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/batches": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The batches the prediction log has seen
         * @description **Role** (with `-auth-tokens`): `read`.
         *
         *     Every batch id with at least one active record in the log (the
         *     `batch_id` of the predicts' `context`), in byte order of the ids,
         *     a page at a time: `next_cursor` (also `X-Next-Cursor`) is null on
         *     the last page, otherwise pass it as `cursor`. For each batch: the
         *     times of its first and last spectrum and how many spectra it has
         *     (active records), the versions that scored it in any role (at
         *     most 16, in byte order; `more_models` counts the others), and
         *     whether it is marked as a reference batch.
         */
        get: operations["listBatches"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/batches/{batch_id}": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description A batch id as the rig sent it in the predicts' `context` (percent-encoded in the path). */
                batch_id: components["parameters"]["BatchId"];
            };
            cookie?: never;
        };
        /**
         * A batch's trajectory
         * @description **Role** (with `-auth-tokens`): `read`.
         *
         *     The batch's spectra as the rig was answered (active records), in
         *     order of maturity: predicted concentrations, confidence, reduced
         *     T² and Q, against the batch's maturity, which is `time` (seconds
         *     since the batch's first spectrum, the default) or `scan_seq` (the
         *     `scan_seq` the rig sent; spectra without one are left out and
         *     counted in `unplaced`). A trajectory holds the batch's first
         *     10,000 spectra at most (`truncated` says when there were more).
         */
        get: operations["getBatch"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/batches/{batch_id}/reference": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description A batch id as the rig sent it in the predicts' `context` (percent-encoded in the path). */
                batch_id: components["parameters"]["BatchId"];
            };
            cookie?: never;
        };
        get?: never;
        /**
         * Mark a batch as a good one, a reference of the control bands
         * @description **Role** (with `-auth-tokens`): `operate`.
         *
         *     The batch must be in the prediction log.
         *     Marking a marked batch again changes nothing and returns the first
         *     mark. At most 20 batches are marked at once; unmark one to mark
         *     another. The mark is stored with the lab's results (the fleet's
         *     database with `-store`) and survives a restart.
         */
        put: operations["markReferenceBatch"];
        post?: never;
        /**
         * Unmark a reference batch
         * @description **Role** (with `-auth-tokens`): `operate`.
         *
         *     Answers 204 whether or not the batch was marked (or is in the
         *     log).
         */
        delete: operations["unmarkReferenceBatch"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/batches/{batch_id}/report": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description A batch id as the rig sent it in the predicts' `context` (percent-encoded in the path). */
                batch_id: components["parameters"]["BatchId"];
            };
            cookie?: never;
        };
        /**
         * The batch against the control bands, one self-contained HTML page
         * @description **Role** (with `-auth-tokens`): `read`.
         *
         *     The trajectory of `GET /batches/{batch_id}` drawn against the
         *     control bands of the reference batches, one plot per analyte and
         *     one each for the reduced T² and Q: at each maturity the mean of the
         *     reference batches ± 3 standard deviations, the points outside the
         *     band marked and listed. The bands are made of every marked batch
         *     but this one (a reference batch is judged by the others); how the
         *     batches are aligned is in `docs/evidence.md`. Without reference
         *     batches the page says so and draws the trajectory alone. Like the
         *     review pages, it fetches nothing and runs no script, and shares
         *     their report slots (503 `SERVER_BUSY` after 5 s without one).
         */
        get: operations["getBatchReport"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/predictions/{predictionId}": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description A `prediction_id` of `GET /predictions`. */
                predictionId: string;
            };
            cookie?: never;
        };
        /**
         * Every logged record of one spectrum, with its contributions
         * @description **Role** (with `-auth-tokens`): `read`.
         *
         *     The active record of the spectrum, then its shadow and re-scoring
         *     records, each with what `GET /predictions` lists and, when the log
         *     stored them, its T2 and Q `contributions` (messages.md section
         *     8.1). The log stores them for a predict whose reply carried them
         *     (`options.contributions`) and, with
         *     `-log-exceedance-contributions` (the default), for an active
         *     prediction whose T2 or Q was above its 95 % limit: then the 10
         *     largest and the region sums, computed off the reply path from the
         *     same spectrum and model, so they add up to the logged T2 and Q.
         *     `spectrum_logged` says whether the spectrum itself was kept
         *     (`-log-spectra`); the page `GET /predictions/{predictionId}/report`
         *     draws it.
         */
        get: operations["getPrediction"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/predictions/{predictionId}/report": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                predictionId: string;
            };
            cookie?: never;
        };
        /**
         * The page of one spectrum, one self-contained HTML document
         * @description **Role** (with `-auth-tokens`): `read`.
         *
         *     Why the server said what it said about one spectrum: the
         *     prediction per analyte with its confidence, T2 and Q against their
         *     limits, the spectrum (after the model's recipe and regions)
         *     against the calibration mean, its residual (the part the model's
         *     components do not explain, whose squares make up Q), and the
         *     contribution of each variable to T2 and to Q, with the largest
         *     named and the region sums. Like the review pages it holds inline
         *     SVG and nothing fetched from elsewhere, and no script.
         *
         *     The spectrum, the residual and the per-variable plots need the
         *     logged spectrum (`-log-spectra`) and the version still in the
         *     registry; without them the page draws the contributions the log
         *     stored (the largest and the region sums) and says what is missing.
         *     The page shares the review pages' two slots (503 `SERVER_BUSY`
         *     after 5 s, `Retry-After: 5`).
         */
        get: operations["getPredictionReport"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/training": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List training jobs, newest first
         * @description **Role** (with `-auth-tokens`): `read`.
         *
         *     Jobs are ordered by submission time, newest first (ties by job id),
         *     and come in pages of at most `limit`. `next_cursor` is null on the
         *     last page; otherwise pass it as `cursor` to get the next page, with
         *     the same `status` filter. A cursor is opaque: it names a position,
         *     so jobs submitted after the first page do not shift later pages.
         *     Records kept on disk are listed too, so a console that reloads
         *     finds every job again. A listed job leaves out what the client
         *     chose the size of, so that a page stays a few MB at most:
         *     `meta.exclude_scan_ids`, `meta.source_batches`, `meta.notes`,
         *     `result.outliers` and `result.lineage`'s `excluded_scan_ids`,
         *     `source_batches` and `notes` (`result.outliers_total` and
         *     `result.lineage.rows_used` count the rows); `GET /training/{jobId}`
         *     gives them in full.
         */
        get: operations["listTrainingJobs"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/training/start": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Upload a training CSV and start an asynchronous training job
         * @description **Role** (with `-auth-tokens`): `operate`.
         *
         *     The CSV is parsed while it streams in; the raw upload is never held in
         *     memory. The first bad row rejects the upload with 400 `INVALID_CSV`,
         *     whose message names the line and column. The part order is free, but
         *     sending `meta` first lets the server reject bad metadata before the
         *     CSV is read.
         *
         *     The upload size limit is configurable (`-max-upload-bytes`, default
         *     512 MiB); beyond it the answer is 413 `PAYLOAD_TOO_LARGE`.
         *
         *     One training runs at a time; further jobs wait in a bounded queue
         *     (`-training-queue`, default 4). An upload takes its place in the
         *     queue before its body is read: the running job, the queued jobs and
         *     the uploads in progress together hold at most `-training-queue` + 1
         *     places. Without a free place the answer is 429 `TRAINING_QUEUE_FULL`
         *     at once, while the client may still be sending, with
         *     `retryable: true`, a `Retry-After` header and `Connection: close`;
         *     the body is not read.
         *
         *     Memory: one training memory budget (`-max-training-memory`, default
         *     a quarter of the host's physical memory) covers every upload being
         *     parsed and the data set of every queued or running job. It counts
         *     the numeric matrix, not the bytes on the wire (a 2-byte cell `1,`
         *     takes 8 bytes), plus one training copy of it: an accepted data set
         *     is charged about 37.5 KB per row of 2048 wavenumbers (16.4 KB
         *     stored, 21 KB for the cross-validation fit). The charge is taken
         *     every 128 rows, before the memory is; an upload whose data set
         *     would cross the budget is refused at that point, while the client
         *     is still sending, with a message naming the budget: 413
         *     `PAYLOAD_TOO_LARGE` (`retryable: false`) when its own charge alone
         *     would cross the whole budget, so that no retry can succeed; 503
         *     `SERVER_BUSY` (`retryable: true`, `Retry-After`) when it would fit
         *     but other uploads and queued or running jobs hold the room now. A job gives its memory back when it ends (done, failed or
         *     cancelled by shutdown); the running job trains with fewer parallel
         *     fits when the budget cannot hold more. The process's peak resident
         *     memory stays under the budget plus a fixed overhead of 128 MiB
         *     (runtime, buffers, loaded models) plus what the prediction
         *     channel's connections may hold (at most 192 MiB with the defaults;
         *     messages.md section 5) plus what the management channel's
         *     connections may hold in request headers: a header block may be
         *     64 KiB (431 beyond), about 192 KiB per connection slot while it
         *     arrives, so 60 MiB for the default 256 + 64 slots (see `/health`).
         *     The server sets the Go soft memory limit to that sum unless
         *     `GOMEMLIMIT` is set.
         *
         *     On shutdown (SIGTERM) the running job is recorded `failed` with
         *     `INTERRUPTED`; queued jobs are not started, their data sets are
         *     saved in the registry (`jobs/<job_id>.dataset`) and they stay
         *     `queued`: the next start queues them again.
         *
         *     The trained model enters the registry as `staged`.
         *
         *     The registry's disk is probed (a 4 KiB write) before any of the
         *     upload is read: a disk that cannot take the model answers 507
         *     `INSUFFICIENT_STORAGE` at once. A disk that fills while the job runs
         *     fails the job with the same code.
         *
         *     On shutdown an upload still arriving is cut at once with 503
         *     `SHUTTING_DOWN`.
         *
         *     Rate: an upload holds a training place while its body arrives, so
         *     the body must keep up a minimum average rate (`-upload-min-rate`,
         *     default 65536 bytes/s; 0 turns it off) once a grace period has
         *     passed (`-upload-rate-grace`, default 10 s): by start + grace +
         *     bytes received / rate, more bytes must have arrived. A body that
         *     falls behind, or stops for the idle limit (`-http-body-timeout`,
         *     default 30 s), is answered 408 `REQUEST_TIMEOUT`, whose message
         *     names the rate, and its place is freed. The 429 message says what
         *     holds the places: the running job, queued jobs, uploads in progress.
         *
         *     Retrying safely: with an `Idempotency-Key`, a client that lost the
         *     answer sends the same request again. The server keeps each key for
         *     24 h, at most 10,000 keys (the oldest go first), across restarts
         *     and shared by every replica of a fleet, with the SHA-256 of the
         *     request: each part's name, content type and bytes, in order, as
         *     received. The same key with the same request gets 202 with the
         *     job the first request created, and no second job, whichever
         *     replica it reaches; with another request, 422
         *     `IDEMPOTENCY_KEY_REUSED`. A retry is read like any upload (its
         *     body must arrive, and needs a training place while it does), so it
         *     can also get 429, 503 or 408; the job is the first one all the
         *     same. Two requests with one key at once: one creates the job, the
         *     other gets 202 with it, or 409 `IDEMPOTENCY_KEY_IN_USE`
         *     (`retryable: true`) while the first has not recorded its job yet.
         */
        post: operations["startTraining"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/training/{jobId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Poll a training job
         * @description **Role** (with `-auth-tokens`): `read`.
         *
         *     Job records are kept on disk and survive restarts. A job that was
         *     `running` when the server stopped reads `failed` with error code
         *     `INTERRUPTED`. A job that was `queued` at a clean shutdown stays
         *     `queued` and runs after the restart; if its saved data set is
         *     missing (the process was killed), damaged, or no longer fits the
         *     memory budget, it reads `failed`/`INTERRUPTED` with a message saying
         *     which. When the registry cannot take the record's write (read-only,
         *     full), this endpoint still reports the job's real state; the record
         *     is written once the disk takes writes again (retried every 5 s).
         */
        get: operations["getTrainingJob"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/training/{jobId}/report": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The review page of the model a done job trained
         * @description **Role** (with `-auth-tokens`): `read`.
         *
         *     The same page as `GET /model/{version}/report` for the job's
         *     `result.new_version`. A job that is not `done` has no model:
         *     409 `JOB_NOT_DONE`. A job whose model was deleted since:
         *     404 `MODEL_NOT_FOUND`.
         */
        get: operations["getTrainingReport"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/training/{jobId}/cancel": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Cancel a queued or running training job
         * @description **Role** (with `-auth-tokens`): `operate`.
         *
         *     A queued job is removed from the queue; a running job is stopped at
         *     its next step (within about a second). Either way the job is
         *     recorded `failed` with error code `CANCELLED` before the answer is
         *     sent, its memory and queue place are freed (a running job's once its
         *     training has stopped, before the answer), and nothing is staged:
         *     a model the cancelled training would have produced is discarded.
         *     The answer is the job as recorded. A job that already ended gets
         *     409 `JOB_FINISHED`; so does a running job whose training had
         *     already finished and whose model was being staged (the answer
         *     waits for that to end; the job reads `done`, or `failed` if the
         *     model could not be staged).
         */
        post: operations["cancelTrainingJob"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/health": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Liveness and readiness
         * @description **Role** (with `-auth-tokens`): none; any, with `-auth-health`.
         *
         *     Always 200 while the process is up (401 only when the server runs
         *     with `-auth-tokens` and `-auth-health` and the request has no valid
         *     token; any role may ask). `status` is `degraded` when any of
         *     these holds, otherwise `ok`:
         *
         *     * the registry directory cannot take a write (probed on each call by
         *       writing, fsyncing and removing 4 KiB; concurrent calls share one
         *       probe). The reason names the condition and errno: disk full
         *       (`ENOSPC`), read-only file system (`EROFS`), quota exhausted
         *       (`EDQUOT`), or the failing call. A probe that has not finished
         *       within `-storage-probe-timeout` (default 5 s; a file system that
         *       hangs, such as a stalled network mount) reads "registry storage
         *       did not answer a 4 KiB write within 5s", answered at once; the stuck probe stays the one every
         *       later call shares until it returns, so probes never pile up.
         *       Loads and training uploads then answer 507
         *       `INSUFFICIENT_STORAGE` (an upload probes before its body is read,
         *       and a probe timeout is 507 too; a load does not probe: on a hung
         *       disk it waits on its index write while other loads get 409
         *       `LOAD_IN_PROGRESS`);
         *     * the model that was active before the last restart could not be
         *       restored at start-up;
         *     * the prediction channel is not listening;
         *     * a model file in the registry could not be read and was moved to the
         *       registry's `quarantine/` folder (with `<name>.reason.txt` beside
         *       it), or a listed model's file is missing. Each is named in
         *       `degraded_reasons` for as long as it lasts: quarantine is listed on
         *       every call, so removing the file from `quarantine/` clears it.
         *
         *     `status: ok` with `model_loaded: false` is a valid answer: the server
         *     is up but every `predict` returns `MODEL_NOT_LOADED`.
         *
         *     `HEAD /health` answers as `GET /health` does, with the same status
         *     and headers (`Content-Length` included) and no body, under the
         *     same authentication, on the health reserve too: for load balancers
         *     and uptime checkers that probe with `HEAD`.
         *
         *     Health answers while the management connection cap
         *     (`-max-http-connections`, default 256) is full of slow, stalled or
         *     silent clients. No connection waits in the kernel's accept queue
         *     for a slot: at the cap the server accepts the newcomer and closes
         *     the connection that has waited longest without a request in
         *     progress: first one that has not sent a whole request header
         *     (oldest first), then a kept-alive connection between requests
         *     (idle longest first); never one whose request is being handled.
         *     A connection is not closed this way in its first 20 ms (an idle
         *     one may be at once, but only when no newer connection is waiting
         *     to send its first request): a newcomer has that long to have its
         *     header read, and a reconnecting flood is accepted no faster than
         *     the slots turn over. A kept-alive client may thus find its idle connection closed
         *     and must connect again, as HTTP clients do.
         *
         *     When no regular connection can be closed (every one has a request
         *     in progress, or the others are younger than 20 ms), a newcomer goes
         *     to a health reserve of 64 connections. A reserve
         *     connection may ask `GET /health` (or `HEAD`) only (anything else gets 503
         *     `SERVER_BUSY` and is closed) and every read and write on it,
         *     headers and keep-alive waits included, has at most 3 s. At the
         *     reserve's cap the same eviction applies among reserve
         *     connections; when all of them have a request in progress too, the
         *     newcomer is closed at once. Open connections stay at the cap plus
         *     64. A request header block may be 64 KiB (431 beyond). JSON bodies
         *     also have a total time limit (`-http-json-body-timeout`, default
         *     10 s), so a client trickling a body holds a regular slot for
         *     seconds, not minutes.
         */
        get: operations["getHealth"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/livez": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Liveness
         * @description **Role** (with `-auth-tokens`): none; any, with `-auth-health`.
         *
         *     200 while the process runs and its management channel answers;
         *     nothing else is checked, so a supervisor restarts the process only
         *     when it is stuck or gone. Open without a token like `GET /health`
         *     (a token is needed with `-auth-health`), answered on the health
         *     reserve too, and `HEAD /livez` answers the same without a body.
         */
        get: operations["getLivez"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/readyz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Readiness
         * @description **Role** (with `-auth-tokens`): none; any, with `-auth-health`.
         *
         *     200 when the server can serve, so that a load balancer sends it
         *     traffic; 503 `NOT_READY` otherwise, with every reason in
         *     `reasons`. Ready means all of:
         *
         *     * both ports are bound (management and prediction);
         *     * a model is loaded, unless the server runs with
         *       `-ready-without-model`;
         *     * the registry can be read (its index; in a fleet, the shared
         *       store answers);
         *     * the server is not shutting down: from SIGTERM on, `/readyz`
         *       answers 503 while in-flight requests finish.
         *
         *     `GET /health` is unchanged (always 200, `degraded` with reasons).
         *     Open without a token like `GET /health` (a token is needed with
         *     `-auth-health`), answered on the health reserve too, and
         *     `HEAD /readyz` answers the same status and headers without a body.
         */
        get: operations["getReadyz"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/metrics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Prometheus metrics
         * @description **Role** (with `-auth-tokens`): `read`.
         *
         *     The server's metrics in the Prometheus text exposition format
         *     (version 0.0.4), for a Prometheus scrape. Needs the `read` role when
         *     authentication is on. See "Metrics" at the top of this document.
         */
        get: operations["getMetrics"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/fleet": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The replicas of the fleet
         * @description **Role** (with `-auth-tokens`): `read`.
         *
         *     Every replica that shares this server's store, as their rows in the
         *     fleet's database say (`-store postgres://…`): each replica writes its
         *     row every second (its heartbeat) and deletes it when it shuts down
         *     cleanly. A replica with no heartbeat for more than
         *     `gone_after_seconds` (10) is shown with `gone: true`: it crashed, was
         *     killed, hangs or cannot reach the database. Ten missed heartbeats in a
         *     row are needed, so a pause or a database restart of a few seconds does
         *     not show a live replica as gone. A gone replica's row is deleted an
         *     hour after its last heartbeat. Every time is the database's clock, so
         *     the replicas' clocks need not agree.
         *
         *     A server without `-store` (the embedded store) answers with itself as
         *     the only replica. Needs the `read` role when authentication is on.
         */
        get: operations["getFleet"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/openapi.yaml": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * This document, as YAML
         * @description **Role** (with `-auth-tokens`): `read`.
         */
        get: operations["getOpenAPIYAML"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/openapi.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * This document, as JSON
         * @description **Role** (with `-auth-tokens`): `read`.
         */
        get: operations["getOpenAPIJSON"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/docs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * This document, as a page to read in a browser
         * @description **Role** (with `-auth-tokens`): `read`.
         *
         *     This contract rendered by Redoc (the npm package `redoc`, pinned;
         *     its standalone build is embedded in the server) as one HTML
         *     document: the renderer and the contract are both inline, so the
         *     page fetches nothing, and it can be saved as one file. Its
         *     `Content-Security-Policy` admits exactly its two inline scripts,
         *     by their SHA-256, and nothing else may load or run. Search is off
         *     (it would need a worker); the browser's own find searches the page.
         */
        get: operations["getDocs"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /**
         * @description Model version name. Letters, digits, `.`, `_` and `-`, starting with a
         *     letter or digit, at most 64 characters (it names files in the registry).
         * @example pls-20261122-101500
         */
        Version: string;
        LoadModelRequest: {
            version: components["schemas"]["Version"];
            /**
             * @description Absent means `staged` (the schema states no `default`, so that
             *     generated clients keep the field optional). `staged` promotes a
             *     staged model, `archived` re-activates an archived model (a
             *     version that exists with the other status gets 409
             *     `MODEL_STATUS_MISMATCH`, whose message names its status; the
             *     currently active version is accepted and reloaded), `file` imports
             *     the `.joblib` file at `path` as a new registry entry named
             *     `version` and activates it.
             * @enum {string}
             */
            source?: "staged" | "archived" | "file";
            /**
             * @description Required when `source` is `file` (else 400 `INVALID_REQUEST`).
             *     Absolute path ending in `.joblib` that, after symlinks are
             *     resolved, lies under one of the server's allowed roots
             *     (`-allow-file-root`, default the registry's `import/` folder);
             *     otherwise 400 `PATH_NOT_ALLOWED`. An optional sidecar
             *     `<path>.json` gives the wavenumber axis and targets (see
             *     `sklearn-import.md`).
             */
            path?: string;
            /**
             * @description Load only if this version is the active one now; the empty
             *     string: only if no model is active. Absent: no such check.
             *     A mismatch is 412 `PRECONDITION_FAILED` naming the active
             *     version.
             */
            expected_active?: string;
        };
        /** @description Outcome of a hot swap. */
        LoadResult: {
            loaded_version: string;
            /** @description Version active before the swap; the empty string when none was. */
            previous_version: string;
            load_time_ms: number;
            algorithm?: string;
        };
        /** @enum {string} */
        ModelStatus: "active" | "staged" | "archived";
        ModelVersion: {
            version: string;
            status: components["schemas"]["ModelStatus"];
            /**
             * Format: date-time
             * @description Training time; for an imported file, the sidecar's `trained_at` or else the file's modification time.
             */
            trained_at: string;
            trained_samples?: number;
            algorithm?: string;
            /** @description Size of the model file in KiB, rounded up. */
            size_kb?: number;
        };
        ModelAxis: {
            version: components["schemas"]["Version"];
            /** @description The model's axis, cm-1, strictly increasing; as many as its `wavenumber_count`. Empty for a model that records no axis. */
            wavenumbers: number[];
        };
        /** @description One registry version in full. */
        ModelDetail: {
            version: string;
            status: components["schemas"]["ModelStatus"];
            /** Format: date-time */
            trained_at: string;
            /**
             * Format: date-time
             * @description When the registry recorded the version.
             */
            added_at?: string;
            algorithm?: string;
            trained_samples?: number;
            latent_components?: number;
            /** @description The analyte of a one-target imported model. */
            target?: string;
            /** @description The model file, relative to the registry directory. */
            file?: string;
            /** Format: int64 */
            size_bytes: number;
            /** @description Hex SHA-256 of the model file, checked at every load; the empty string for an entry recorded before checksums were. */
            sha256: string;
            metrics?: components["schemas"]["TrainingMetrics"];
            lineage: components["schemas"]["ModelLineage"];
            /** @description Lower and upper wavenumber of the model's axis, cm-1. */
            wavenumber_range?: number[];
            /** @description Points per spectrum the model expects. */
            wavenumber_count?: number;
            /** @description The wavenumber ranges that enter the model; absent when every point does. */
            regions?: components["schemas"]["WavenumberRegion"][];
            /** @description The model's recipe, applied to every spectrum before the model; absent or empty for raw intensities. For an import, the pipeline's recognised steps in the same form. */
            preprocessing?: components["schemas"]["PreprocessingStep"][];
            /** @description Path of the review page, `/model/<version>/report`. */
            report_url?: string;
        };
        /**
         * @description Where the version came from. A model trained here carries the
         *     operator's TrainingMeta, its job and the SHA-256 and row count of
         *     the training CSV; an import carries `imported_from`; an adopted
         *     file carries none of them.
         */
        ModelLineage: {
            /** @description The operator TrainingMeta named (self-declared). */
            operator?: string;
            /**
             * @description The name of the token that started the training job or the
             *     import, from the server's `-auth-tokens` file; absent when
             *     authentication was off. Compare it with `operator`.
             */
            authenticated_as?: string;
            source_batches?: string[];
            notes?: string;
            job_id?: string;
            /** @description Hex SHA-256 of the CSV part exactly as uploaded. */
            training_csv_sha256?: string;
            training_rows?: number;
            /** @description Path the `.joblib` file was imported from. */
            imported_from?: string;
            /** @description TrainingMeta's `annotations`, as uploaded. */
            annotations?: {
                [key: string]: unknown;
            };
            /** @description Rows that entered the model (`training_rows` less the excluded ones). */
            rows_used?: number;
            /**
             * @description TrainingMeta's `exclude_scan_ids`, in a training job's `result`
             *     (`GET /training/{jobId}`) only. `GET /model/{version}` leaves
             *     them out (`training_rows` less `rows_used` counts them): the
             *     registry's index keeps one small entry per version, and the
             *     ids stay in the model file's review, listed by its report.
             */
            excluded_scan_ids?: string[];
        };
        ModelList: {
            /** @description Active version; null when no model is loaded. */
            active: string | null;
            models: components["schemas"]["ModelVersion"][];
        };
        /** @description One number per component; a component the model does not predict is omitted. */
        MetricBreakdown: {
            /** Format: double */
            EPA?: number;
            /** Format: double */
            DHA?: number;
            /** Format: double */
            DPA?: number;
        };
        ModelInfo: {
            active_version: string;
            /** @description `PLS2-NIPALS` for models trained here; for imports `sklearn-PLSRegression` or `sklearn-Pipeline(<steps>,PLSRegression)` naming the steps before the PLS, for example `sklearn-Pipeline(StandardScaler,PLSRegression)` or `sklearn-Pipeline(savgol_filter,snv,PLSRegression)`. */
            algorithm: string;
            latent_components?: number;
            /** Format: date-time */
            trained_at: string;
            trained_samples?: number;
            /** @description Cross-validated RMSE (RMSECV) per component, g/L. Absent for imported models. */
            rmse?: components["schemas"]["MetricBreakdown"];
            /** @description Cross-validated R2 per component. Absent for imported models. */
            r2?: components["schemas"]["MetricBreakdown"];
            /** @description Lower and upper wavenumber of the model's axis, cm-1. */
            wavenumber_range?: number[];
            /** @description Number of points per spectrum the model expects. */
            wavenumber_count?: number;
            /**
             * @description The model's axis, cm-1, in order (`wavenumber_count` values).
             *     Only in a prediction channel `model_info_reply` whose request
             *     asked for it with `body.include: ["wavenumbers"]`; never in
             *     `GET /model/info` (`GET /model/{version}/axis` gives it).
             */
            wavenumbers?: number[];
        };
        /**
         * @description The training request's metadata and options. A field not defined
         *     here is `INVALID_METADATA`, naming it; a console keeps its own
         *     data in `annotations`.
         */
        TrainingMeta: {
            /** @description Operator user id. */
            operator: string;
            source_batches?: string[];
            notes?: string;
            /**
             * @description The instrument's axis in cm-1, one value per intensity column
             *     (`wn_0` .. `wn_2047`), strictly increasing; it need not be
             *     linear. It becomes the model's stored axis, and `regions` and
             *     every wavenumber in `preprocessing` refer to it. Absent: the
             *     server's axis (`-instrument-axis`, default 2048 points evenly
             *     spaced over 200-3200 cm-1). Not increasing or not finite:
             *     `INVALID_TRAINING_OPTIONS`.
             */
            wavenumbers?: number[];
            /**
             * @description A fixed latent component count. Cross-validation still runs for
             *     1..`components` (the model's RMSECV and the CV curve come from
             *     it), but does not choose: `result.component_selection.rule` is
             *     `fixed`. Above what the rows allow (min(n-1, n - largest fold -
             *     1)): `INVALID_TRAINING_OPTIONS`. Absent: chosen by
             *     cross-validation up to `max_components`.
             */
            components?: number;
            /**
             * @description The largest count cross-validation tries (capped by the rows, as
             *     for `components`); absent means 20. Ignored when `components` is
             *     set.
             */
            max_components?: number;
            /**
             * @description K of the K-fold cross-validation; absent means 10. With n rows
             *     left after `exclude_scan_ids`, K = n is leave-one-out (n >= 3);
             *     any other K needs n >= K + 2. More folds than rows, or fewer
             *     rows than that: `INVALID_TRAINING_OPTIONS`. Each fold is a fit,
             *     so leave-one-out costs n + 1 fits.
             */
            cv_folds?: number;
            /**
             * @description How the rows (in CSV order, after `exclude_scan_ids`) are
             *     assigned to the K folds; absent means `random`.
             *
             *     * `random`: a seeded permutation of the rows cut into K
             *       contiguous parts (the same folds for the same rows).
             *     * `consecutive`: contiguous blocks in row order, as R pls's
             *       `segment.type = "consecutive"` and scikit-learn's
             *       `KFold(shuffle=False)`. With n rows, the first n mod K blocks
             *       have one row more than the others: the sizes of both (R gives
             *       ceiling(n/K) rows to the first K - (K ceiling(n/K) - n)
             *       segments and one fewer to the rest, which are the same
             *       counts).
             *     * `interleaved`: row i (from 0) goes to fold i mod K, as R
             *       pls's `segment.type = "interleaved"`.
             *
             *     For leave-one-out every type gives the same folds.
             * @enum {string}
             */
            cv_segments?: "random" | "consecutive" | "interleaved";
            /**
             * @description How the component count is chosen from the CV curve; absent
             *     means `onesigma`. Not with `components` (which fixes the count):
             *     `INVALID_TRAINING_OPTIONS`. Counts start at 1. Every rule starts
             *     from k*, the count of lowest CV score (score: the mean over
             *     analytes of RMSECV / sd of the labels; `min_score_components`),
             *     and chooses a count at most k*. r_ijk is row i's
             *     cross-validated residual of analyte j with k components, sd_j
             *     the label's standard deviation, n the rows, q the analytes.
             *
             *     * `onesigma` (R pls `selectNcomp(method = "onesigma")`): the
             *       smallest k with score_k - SE_k < score_k*, where each count
             *       has its own standard error from its CV residuals, SE_k = (1/q)
             *       sum_j sd_i(r_ijk) / (sd_j sqrt(n)) (sd_i with n - 1). For one
             *       analyte this is R's `RMSEP_k - sd(r_k)/sqrt(n) < min RMSEP`.
             *     * `randomization` (van der Voet, 1994, as R pls's `selectNcomp(method =
             *       "randomization")`): for each k < k*, the per-row differences
             *       d_i = sum_j (r_ijk^2 - r_ijk*^2) / sd_j^2 are tested for a
             *       mean above 0 by 999 random sign flips of the d_i (seeded: the
             *       same data gives the same flips); with c the flips whose mean
             *       is >= mean(d), p_k = (c + 0.5) / 1000. The choice is the
             *       smallest k with p_k > 0.01 (R's default alpha), else k*. For
             *       one analyte the scaling cancels and this is R's test.
             *     * `one_standard_error`: the smallest k with score_k <= score_k*
             *       + SE_k*, with SE the standard error of the score across the
             *       folds (Hastie, Tibshirani & Friedman, sec. 7.10).
             *
             *     R's rules take one response and also consider 0 components;
             *     here several analytes combine through the division by sd_j, so
             *     that each weighs alike, as in the score, and 0 components (the
             *     mean alone) is never a model.
             *
             *     The default is chosen on held-out error: trained on gasoline's
             *     rows 1-50 (R pls's data set, NIR at 401 points, and resampled
             *     to 2048), yarn's 21 training rows (268 points, and resampled),
             *     and 40 and 120 synthetic spectra (`trainer/synth`, 3 analytes,
             *     RMSEP per analyte), and tested on gasoline's rows 51-60, yarn's
             *     7 test rows and 200 other synthetic spectra. Chosen count and
             *     test RMSEP, with 10 folds (seed 0 for `random`) and with
             *     leave-one-out:
             *
             *     | data | segments | one_standard_error | onesigma | randomization |
             *     |---|---|---|---|---|
             *     | gasoline 401 | random | 4: 0.329 | 3: 0.234 | 2: 0.245 |
             *     | gasoline 401 | consecutive | 5: 0.278 | 3: 0.234 | 3: 0.234 |
             *     | gasoline 401 | interleaved | 4: 0.329 | 3: 0.234 | 2: 0.245 |
             *     | gasoline 401 | leave-one-out | 4: 0.329 | 3: 0.234 | 2: 0.245 |
             *     | gasoline 2048 | random | 5: 0.259 | 3: 0.245 | 2: 0.251 |
             *     | gasoline 2048 | consecutive | 3: 0.245 | 3: 0.245 | 3: 0.245 |
             *     | gasoline 2048 | interleaved | 4: 0.336 | 3: 0.245 | 2: 0.251 |
             *     | gasoline 2048 | leave-one-out | 4: 0.336 | 3: 0.245 | 2: 0.251 |
             *     | yarn 268 | random | 8: 0.116 | 8: 0.116 | 7: 0.111 |
             *     | yarn 268 | consecutive | 9: 0.095 | 9: 0.095 | 8: 0.116 |
             *     | yarn 268 | interleaved | 7: 0.111 | 7: 0.111 | 7: 0.111 |
             *     | yarn 268 | leave-one-out | 10: 0.078 | 8: 0.116 | 7: 0.111 |
             *     | yarn 2048 | random | 8: 0.115 | 8: 0.115 | 7: 0.109 |
             *     | yarn 2048 | consecutive | 9: 0.096 | 9: 0.096 | 8: 0.115 |
             *     | yarn 2048 | interleaved | 7: 0.109 | 7: 0.109 | 7: 0.109 |
             *     | yarn 2048 | leave-one-out | 10: 0.079 | 8: 0.115 | 7: 0.109 |
             *     | synth 40 | random | 12: 1.17/0.88/0.47 | 10: 1.08/0.87/0.44 | 10: 1.08/0.87/0.44 |
             *     | synth 40 | consecutive | 12: 1.17/0.88/0.47 | 11: 1.09/0.82/0.43 | 14: 1.14/0.84/0.50 |
             *     | synth 40 | interleaved | 12: 1.17/0.88/0.47 | 10: 1.08/0.87/0.44 | 14: 1.14/0.84/0.50 |
             *     | synth 40 | leave-one-out | 12: 1.17/0.88/0.47 | 12: 1.17/0.88/0.47 | 14: 1.14/0.84/0.50 |
             *     | synth 120 | any | 13: 0.92/0.55/0.40 | 13: 0.92/0.55/0.40 | 13: 0.92/0.55/0.40 |
             *
             *     `onesigma` has the lowest or tied-lowest error in 19 of the 24
             *     rows, against 12 for `randomization` and 11 for
             *     `one_standard_error` (synthetic rows compared by the sum of
             *     the three RMSEPs); on gasoline its choice (3, R's) does not
             *     move with the segments, where the others' do. `make
             *     rule-evidence` measures the table.
             * @enum {string}
             */
            component_rule?: "onesigma" | "randomization" | "one_standard_error";
            /**
             * @description Rows of the CSV left out of the model (for example outliers
             *     found in an earlier report). Each must name a `scan_id` of the
             *     CSV, else `INVALID_TRAINING_OPTIONS`. They are recorded in the
             *     lineage.
             */
            exclude_scan_ids?: string[];
            /**
             * @description Only the axis points inside these inclusive `[low, high]`
             *     wavenumber ranges (cm-1) enter the model; overlapping ranges are
             *     merged. Preprocessing runs on the whole spectrum first, so
             *     derivatives and baselines are not cut at a region edge. A range
             *     with `low > high`, outside the axis, or holding no axis point:
             *     `INVALID_TRAINING_OPTIONS`. Absent: every point.
             */
            regions?: components["schemas"]["WavenumberRegion"][];
            /**
             * @description The console's own data (for example its form state or a ticket
             *     reference), free-form JSON that the server never reads: stored
             *     with the job, echoed in its `meta` and in the model's lineage
             *     (`GET /training/{jobId}`, `GET /model/{version}`). At most 64
             *     keys and 16 KiB as compact JSON, else `INVALID_METADATA`. `GET
             *     /training` leaves it out.
             */
            annotations?: {
                [key: string]: unknown;
            };
            /**
             * @description Steps applied in order to each spectrum, identically at training
             *     and at predict time; the model file stores them (`artifact.md`
             *     gives every formula). An unknown `step` is `INVALID_METADATA`;
             *     a parameter that cannot apply to the axis is
             *     `INVALID_TRAINING_OPTIONS`, and so is a training row the
             *     recipe cannot apply to (a zero band area under `normalize`),
             *     but as the failed job's `error.code`. Absent or empty: raw
             *     intensities.
             *
             *     Every predict pays the recipe, so its cost is bounded: at most
             *     one `als_baseline` step (up to 50 banded solves over the
             *     spectrum, about 0.5 ms for 2048 points), and Savitzky-Golay
             *     windows that sum to at most 2047 (a window of w costs w
             *     multiply-adds per point); beyond either,
             *     `INVALID_TRAINING_OPTIONS`. `make bench` measures the
             *     server-side cost of a predict with savgol(15,2,1) + snv and
             *     with an `als_baseline` step.
             */
            preprocessing?: components["schemas"]["PreprocessingStep"][];
        };
        /** @description An inclusive `[low, high]` range of wavenumbers, cm-1. */
        WavenumberRegion: number[];
        /** @description One step of a preprocessing recipe, told apart by `step`. */
        PreprocessingStep: components["schemas"]["DespikeStep"] | components["schemas"]["SavgolStep"] | components["schemas"]["SnvStep"] | components["schemas"]["AlsBaselineStep"] | components["schemas"]["NormalizeStep"];
        /**
         * @description Removes cosmic-ray spikes: narrow positive spikes of 1 to
         *     `width`+1 points. With the first differences d_i = x_{i+1} - x_i,
         *     e_i = d_i - median(d) and the cut c = `threshold` x MAD / 0.6745
         *     (MAD = median(|e|): the modified z-score of the differences, as in
         *     Whitaker & Hayes, Chemometr. Intell. Lab. Syst. 179 (2018) 82-84;
         *     the mean absolute deviation x 1.253314 when the MAD is 0), a
         *     rising edge is an e_i > c more than twice the e_{i-1} before it,
         *     a falling edge an e_j < -c more than twice the e_{j+1} after it.
         *     A rising edge at i and the last falling edge j with
         *     i < j <= i + `width` + 1 make points i+1..j a spike, replaced by
         *     the straight line over the wavenumber axis between x_i and
         *     x_{j+1}; the scan goes on after j. The slope of a Raman band
         *     changes gradually, so band flanks and tops are left alone however
         *     high their signal-to-noise ratio; a spike at the first or last
         *     point is left too. api/artifact.md gives the rule step by step.
         *     The count of repaired points is reported by training.
         */
        DespikeStep: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            step: "despike";
            /**
             * Format: double
             * @description The cut on the modified z-score of a spike's rising and falling differences; absent means 6.
             */
            threshold?: number;
            /** @description A spike spans at most `width`+1 points (a cosmic ray hits one or two detector pixels); absent means 2. Keep it well below the narrowest band's width in points (on synthetic spectra with bands 10 points wide, width 8 starts to take band tops for spikes). */
            width?: number;
        };
        /**
         * @description Savitzky-Golay smoothing or derivative over the point index, with
         *     the edges fitted as `scipy.signal.savgol_filter(x, window,
         *     polyorder, deriv, delta=1, mode="interp")`. `window` must be odd
         *     and greater than `polyorder`, and `deriv` at most `polyorder`, else
         *     `INVALID_TRAINING_OPTIONS`. A `window` above 2047 (the spectrum
         *     has 2048 points) fails the schema: `INVALID_METADATA`.
         */
        SavgolStep: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            step: "savgol";
            window: number;
            polyorder: number;
            /** @description Derivative order, at most `polyorder` (else `INVALID_TRAINING_OPTIONS`); absent means 0 (smoothing). */
            deriv?: number;
        };
        /** @description Standard normal variate, `(x - mean(x)) / std(x)` with the population (ddof 0) standard deviation. A flat spectrum is left at zero. */
        SnvStep: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            step: "snv";
        };
        /**
         * @description Asymmetric least squares baseline (Eilers & Boelens, 2005),
         *     subtracted: `iterations` rounds of solving `(W + lam D'D) z = W x`
         *     with D the second-difference matrix and weights `p` where x > z and
         *     `1 - p` elsewhere (all weights 1 in the first round).
         */
        AlsBaselineStep: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            step: "als_baseline";
            /**
             * Format: double
             * @description Absent means 1e5.
             */
            lam?: number;
            /**
             * Format: double
             * @description Absent means 0.01.
             */
            p?: number;
            /** @description Absent means 10. */
            iterations?: number;
        };
        /**
         * @description Divides the spectrum by its band area over `region` (trapezoidal
         *     rule over the axis points inside it, in intensity x cm-1): an
         *     internal standard such as the solvent band. The region must hold at
         *     least two axis points, else `INVALID_TRAINING_OPTIONS`. A spectrum
         *     whose band area is zero or not finite at predict time gets
         *     `INVALID_SPECTRUM`.
         */
        NormalizeStep: {
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            step: "normalize";
            region: components["schemas"]["WavenumberRegion"];
        };
        TrainingUpload: {
            /**
             * Format: binary
             * @description Columns in this order: `scan_id`, `wn_0` .. `wn_2047`,
             *     `EPA_g_per_L`, `DHA_g_per_L`, `DPA_g_per_L`; comma separated, one
             *     header line, one spectrum per line. `scan_id` values are unique.
             *     Intensities and labels are finite decimal numbers
             *     (`[+-]digits[.digits][e[+-]digits]`, at least one digit before or
             *     after the point): no digit separators (`1_000`), hexadecimal
             *     (`0x1p-2`), `inf`, `infinity` or `nan`; labels are
             *     non-negative. At least 12 rows (10-fold cross-validation needs
             *     two more rows than folds).
             */
            csv: Blob;
            meta: components["schemas"]["TrainingMeta"];
        };
        TrainingJobAccepted: {
            job_id: string;
            estimated_duration_seconds?: number;
            /** @description Path of the form `/training/<job_id>`. */
            status_url?: string;
        };
        /** @description Cross-validated figures of the chosen component count. */
        TrainingMetrics: {
            rmse: components["schemas"]["MetricBreakdown"];
            r2: components["schemas"]["MetricBreakdown"];
        };
        TrainingResult: {
            new_version: string;
            metrics: components["schemas"]["TrainingMetrics"];
            /** @description Path of the stored model file, relative to the registry directory. */
            artifact_path: string;
            component_selection?: components["schemas"]["ComponentSelection"];
            /** @description Cross-validated figures for every component count tried, 1..`component_selection.max_components`. */
            cv_curve?: components["schemas"]["CVPoint"][];
            outlier_limits?: components["schemas"]["OutlierLimits"];
            /** @description Training spectra beyond the 95 % T2 or Q limit of the final model, or with a studentised label residual above 3 for any analyte; at most 1000, the most extreme first (`outliers_total` counts them all). */
            outliers?: components["schemas"]["TrainingOutlier"][];
            outliers_total?: number;
            /** @description Points the `despike` steps repaired over all training spectra; 0 without such a step. */
            spikes_repaired?: number;
            /** @description Training spectra in which at least one point was repaired. */
            spectra_despiked?: number;
            lineage?: components["schemas"]["ModelLineage"];
            /** @description Path of the review page, `/training/<job_id>/report`. */
            report_url?: string;
        } | null;
        ComponentSelection: {
            /** @description The chosen latent component count. */
            components: number;
            /**
             * @description The rule that chose the count: TrainingMeta's `component_rule`
             *     (its description defines each), or `fixed` for TrainingMeta's
             *     `components`.
             * @enum {string}
             */
            rule: "onesigma" | "randomization" | "one_standard_error" | "fixed";
            /**
             * @description How the rows were assigned to the folds (TrainingMeta's `cv_segments`); absent for models trained before it was recorded, which used `random`.
             * @enum {string}
             */
            cv_segments?: "random" | "consecutive" | "interleaved";
            /** @description The largest count tried (after the caps the rows impose). */
            max_components: number;
            /** @description K of the cross-validation; equal to the rows used for leave-one-out. */
            folds: number;
            /** @description RMSECV per analyte at the chosen count, g/L. */
            rmsecv: components["schemas"]["MetricBreakdown"];
            /** @description The count with the lowest CV score. */
            min_score_components?: number;
        };
        CVPoint: {
            components: number;
            rmsecv: components["schemas"]["MetricBreakdown"];
            r2cv: components["schemas"]["MetricBreakdown"];
            /**
             * Format: double
             * @description Mean over analytes of RMSECV / sd(labels).
             */
            score?: number;
            /**
             * Format: double
             * @description The standard error of `score` the rule reads: across folds for
             *     `one_standard_error` and `fixed`; from the CV residuals (SE_k of
             *     `onesigma`, TrainingMeta's `component_rule`) for `onesigma` and
             *     `randomization`.
             */
            score_se?: number;
        };
        OutlierLimits: {
            /**
             * Format: double
             * @description The final model's 95 % Hotelling T2 limit.
             */
            t2: number;
            /**
             * Format: double
             * @description The final model's 95 % Q limit (Jackson & Mudholkar, 1979, with the calibration residuals).
             */
            q: number;
            /**
             * Format: double
             * @description The label residual limit, 3.
             */
            studentized_residual?: number;
        };
        TrainingOutlier: {
            scan_id: string;
            reasons: ("t2" | "q" | "label_residual")[];
            /** Format: double */
            t2?: number;
            /** Format: double */
            q?: number;
            /**
             * Format: double
             * @description T2 over its 95 % limit.
             */
            reduced_t2: number;
            /**
             * Format: double
             * @description Q over its 95 % limit.
             */
            reduced_q: number;
            /**
             * @description Per analyte, the calibration residual divided by its standard
             *     error, `(y - yhat) / (s sqrt(1 - h))` with s the RMSEC scaled
             *     to `n - A - 1` degrees of freedom and h the leverage
             *     `1/n + T2/(n-1)`.
             */
            studentized_residuals?: components["schemas"]["MetricBreakdown"];
        };
        TrainingError: {
            /** @description `TRAINING_DIVERGED`, `INTERRUPTED`, `CANCELLED` (`POST /training/{jobId}/cancel`), `INSUFFICIENT_STORAGE` (the registry disk could not take the model), `INVALID_TRAINING_OPTIONS` (the `preprocessing` recipe cannot apply to a training row, for example a `normalize` band whose area is zero or a row that is not finite after the recipe; the message names the row's `scan_id` and the step; found only while the job runs, so not answered by the upload) or `INTERNAL_ERROR`. */
            code: string;
            message: string;
        } | null;
        TrainingJob: {
            job_id: string;
            /**
             * @description `rescore` for a job started by `POST /model/{version}/rescore`; absent means `training` (records written before re-scoring existed).
             * @enum {string}
             */
            kind?: "training" | "rescore";
            /** @description What a `rescore` job scores and, once done, how many spectra it scored; absent for training jobs. */
            rescore?: components["schemas"]["RescoreResult"];
            status: components["schemas"]["TrainingJobStatus"];
            /**
             * Format: double
             * @description Fraction of the fold x component steps done; monotonic; 1.0 only when done.
             */
            progress: number;
            elapsed_seconds?: number;
            /** Format: date-time */
            submitted_at?: string;
            /** Format: date-time */
            started_at?: string;
            /** Format: date-time */
            finished_at?: string;
            /** @description Rows of the training CSV. */
            samples?: number;
            /**
             * @description With `-store` (a fleet): how many runs the job has had. A job
             *     whose runner stopped renewing its lease (a replica killed) is
             *     run again by another replica, so 2 or more means it was retried.
             *     Absent for a job not yet run, and on the embedded store.
             */
            attempts?: number;
            /**
             * @description The name of the token that uploaded the job, from the server's
             *     `-auth-tokens` file; absent when authentication was off. The
             *     self-declared operator is `meta.operator`.
             */
            authenticated_as?: string;
            /**
             * @description The upload's TrainingMeta as recorded, less `wavenumbers` (2048
             *     numbers per job; the model's file keeps the axis, and
             *     `GET /model/{version}` reports its range and count). `GET
             *     /training` also leaves out `exclude_scan_ids`.
             */
            meta?: components["schemas"]["TrainingMeta"];
            /** @description The outcome on `done`; null while queued or running and after a failure. */
            result: components["schemas"]["TrainingResult"] | null;
            /** @description Why the job failed, on `failed`; null otherwise. */
            error: components["schemas"]["TrainingError"] | null;
        };
        /**
         * @description queued -> running -> done, or failed from queued or running.
         * @enum {string}
         */
        TrainingJobStatus: "queued" | "running" | "done" | "failed";
        TrainingJobList: {
            jobs: components["schemas"]["TrainingJob"][];
            /** @description Cursor of the next page; null on the last page. */
            next_cursor: string | null;
        };
        HealthStatus: {
            /** @enum {string} */
            status: "ok" | "degraded";
            model_loaded?: boolean;
            active_version?: string | null;
            uptime_seconds?: number;
            /** @description Module version from the Go build information (`devel` for a local build). */
            server_version?: string;
            /** @description Prediction channel protocol version; 1. */
            protocol_version?: number;
            /**
             * @description The server is written in Go and runs no Python. This field holds
             *     the version of the Go runtime it runs on, for example `go1.26.8`.
             */
            python_version?: string;
            /** @description Present when `status` is `degraded`; one human-readable reason per condition. */
            degraded_reasons?: string[];
            prediction_log?: components["schemas"]["PredictionLogHealth"];
        };
        Fleet: {
            /** @description Oldest first (by `started_at`), ties by `id`. */
            replicas: components["schemas"]["Replica"][];
            /** @description A replica whose last heartbeat is older than this is `gone`; 10. */
            gone_after_seconds: number;
        };
        Replica: {
            /** @description The replica's id, `host-pid-random`; a restarted process is a new replica. */
            id: string;
            /** @description The host name of the machine (or container) it runs on. */
            host: string;
            /** @description The management address it bound, e.g. `0.0.0.0:5556` (all interfaces) or `10.0.0.7:5556`. */
            http_address: string;
            /** @description The prediction endpoint it bound, e.g. `tcp://10.0.0.7:5555`. */
            zmq_endpoint: string;
            /** @description The model version it serves; null when none is active. */
            version_served: string | null;
            /** @description The shadow version named in the registry; null when none is set. */
            shadow_version: string | null;
            /**
             * @description At its last heartbeat, the replica served the model the fleet's
             *     registry names as active (none named: not ready) and reached the
             *     store.
             */
            ready: boolean;
            /**
             * Format: date-time
             * @description Its first heartbeat.
             */
            started_at: string;
            /** Format: date-time */
            last_heartbeat: string;
            /** @description No heartbeat for more than `gone_after_seconds`. */
            gone: boolean;
        };
        Liveness: {
            /** @enum {string} */
            status: "alive";
        };
        Readiness: {
            /** @enum {string} */
            status: "ready";
        };
        /** @description The `ErrorResponse` envelope with the reasons the server is not ready. */
        NotReady: {
            /** @enum {string} */
            code: "NOT_READY";
            message: string;
            /** @default false */
            retryable: boolean;
            reasons: string[];
        };
        ErrorResponse: {
            /** @description Machine-readable code; see the table at the top of this document. */
            code: string;
            message: string;
            /** @default false */
            retryable: boolean;
        };
        /** @description One number per analyte, g/L unless stated; an analyte the model does not predict is absent. */
        AnalyteValues: {
            /** Format: double */
            EPA?: number;
            /** Format: double */
            DHA?: number;
            /** Format: double */
            DPA?: number;
        };
        ShadowRequest: {
            version: components["schemas"]["Version"];
        };
        ShadowStatus: {
            /** @description The shadow version; null when none is set. */
            version: string | null;
            /**
             * Format: date-time
             * @description When it was set; the comparison counts from here.
             */
            since?: string;
            comparison?: components["schemas"]["ShadowComparison"];
        };
        ShadowComparison: {
            /**
             * Format: int64
             * @description Predicts scored by both models since the shadow was set.
             */
            n: number;
            /**
             * Format: int64
             * @description Predicts the shadow did not score because its queue was full (the reply never waits for it).
             */
            dropped?: number;
            /**
             * Format: int64
             * @description Predicts the shadow refused (another wavenumber axis, out of its range); they are not in n.
             */
            failed?: number;
            analytes: {
                EPA?: components["schemas"]["AnalyteComparison"];
                DHA?: components["schemas"]["AnalyteComparison"];
                DPA?: components["schemas"]["AnalyteComparison"];
            };
        };
        AnalyteComparison: {
            /** Format: int64 */
            n: number;
            /**
             * Format: double
             * @description Mean of shadow minus active, g/L; absent when n is 0.
             */
            mean_difference?: number;
            /**
             * Format: double
             * @description Root-mean-square of shadow minus active, g/L; absent when n is 0.
             */
            rmsd?: number;
            /**
             * Format: double
             * @description Share of the n spectra where |shadow - active| exceeds the analyte's tolerance; absent when n is 0.
             */
            disagree_share?: number;
            /**
             * Format: double
             * @description The tolerance used, g/L.
             */
            tolerance?: number;
        };
        /** @description One HPLC result. Either `scan_seq` or `sampled_at` is required, and at least one analyte. */
        LabResult: {
            /** @description The lab's id of the sample; posting it again replaces the earlier result. */
            lab_sample_id: string;
            batch_id: string;
            /**
             * Format: int64
             * @description The `scan_seq` of the spectrum taken with the sample (predict context).
             */
            scan_seq?: number;
            /**
             * Format: date-time
             * @description When the sample was drawn; matched to the nearest logged prediction of the batch within `-lab-match-window`.
             */
            sampled_at?: string;
            /** Format: double */
            EPA?: number;
            /** Format: double */
            DHA?: number;
            /** Format: double */
            DPA?: number;
        };
        LabResultsOutcome: {
            received: number;
            /** @description Records matched and stored, replacements included. */
            matched: number;
            /** @description Records whose `lab_sample_id` was stored before (matched or not); their earlier result is gone. */
            replaced: number;
            unmatched: components["schemas"]["UnmatchedLabResult"][];
        };
        UnmatchedLabResult: {
            /** @description The record's position in the post, from 0; the array index, or the CSV row counted after the header (the first data row is 0). */
            index: number;
            lab_sample_id: string;
            /** @enum {string} */
            reason: "unknown_batch" | "no_prediction_for_scan_seq" | "none_within_window";
            message: string;
        };
        AnalytePerformance: {
            n: number;
            /**
             * Format: double
             * @description sqrt(mean((predicted - lab)^2)), g/L.
             */
            rmsep?: number;
            /**
             * Format: double
             * @description mean(predicted - lab), g/L.
             */
            bias?: number;
            /**
             * Format: double
             * @description b of lab = a + b * predicted (ordinary least squares).
             */
            slope?: number;
            /**
             * Format: double
             * @description a of lab = a + b * predicted, g/L.
             */
            intercept?: number;
        };
        AnalytePerformances: {
            EPA?: components["schemas"]["AnalytePerformance"];
            DHA?: components["schemas"]["AnalytePerformance"];
            DPA?: components["schemas"]["AnalytePerformance"];
        };
        /** @description The numbers behind a trained model's review (`GET /model/{version}/review` defines them). */
        ModelReview: {
            version: string;
            /** @description The analytes in the order of every per-analyte array. */
            analytes: string[];
            /** @description The p axis points the model uses, cm-1, increasing. */
            wavenumbers: number[];
            /** @description VIP per variable, in the order of `wavenumbers`. */
            vip: number[];
            /** @description One entry per component of the model, 1..A. */
            components: components["schemas"]["ReviewComponent"][];
            /**
             * @description The NIPALS X weights w_a of each component, 1..A, each over
             *     `wavenumbers` (unit length; signed as the fit made them, so
             *     that w_a'r_a = 1 for the rotation r_a).
             */
            x_weights: number[][];
            /** @description The X loadings p_a of each component, 1..A, each over `wavenumbers`. */
            x_loadings: number[][];
            /** @description Leverage of each training row, in training order (`1/n + t_i'(T'T)^-1 t_i`). */
            leverage: number[];
            /** @description Calibration RMSE per analyte with A components, g/L. */
            rmsec: number[];
            /** @description Cross-validated RMSE per analyte with A components, g/L. */
            rmsecv: number[];
            /**
             * @description The X scores t_i of each training row, in training order, each
             *     with A values: the numbers behind the scores plot. Absent for a
             *     model file written before it kept them.
             */
            scores?: number[][];
            spectra?: components["schemas"]["ReviewSpectra"];
        };
        /**
         * @description The few training spectra the model file keeps, before and after the
         *     recipe: the numbers behind the review page's spectra plots. Absent
         *     for a model file written before it kept them.
         */
        ReviewSpectra: {
            /** @description The training row numbers (0-based, training order) of the kept spectra; `raw[i+1]` and `preprocessed[i+1]` are row `rows[i]`. */
            rows: number[];
            /** @description As uploaded, over the whole axis of the model's `meta.wavenumbers`; `raw[0]` is the mean of every training row. */
            raw: number[][];
            /**
             * @description After the recipe, over `wavenumbers` (the points the model
             *     uses); `preprocessed[0]` is the model's own `x_mean` (the mean
             *     of every preprocessed training row). An entry is `null` for a
             *     row the recipe refuses; absent when the file's recipe no longer
             *     applies to its axis.
             */
            preprocessed?: (number[] | null)[];
        };
        ReviewComponent: {
            /** @description The model truncated to this many components. */
            components: number;
            /**
             * Format: double
             * @description Share of the X sum of squares this component explains.
             */
            r2x: number;
            /** Format: double */
            r2x_cumulative: number;
            /** @description Cumulative R2 of the calibration fit, per analyte. */
            r2y: number[];
            /** @description Cross-validated Q2 per analyte; absent when the model file's CV curve lacks this count. */
            q2?: number[];
        };
        ModelPerformance: {
            version: string;
            /** Format: date-time */
            since?: string;
            /** Format: date-time */
            until?: string;
            analytes: components["schemas"]["AnalytePerformances"];
            /** @description Every version, this one included, that scored the matched spectra, with its statistics over the spectra it scored. */
            models: components["schemas"]["ModelPerformanceEntry"][];
            /** @description This version's bias per batch, ordered by the batch's first matched sample. */
            batches: components["schemas"]["BatchBias"][];
        };
        ModelPerformanceEntry: {
            version: string;
            /** @description How it scored those spectra. */
            roles: components["schemas"]["PredictionRole"][];
            analytes: components["schemas"]["AnalytePerformances"];
        };
        BatchBias: {
            batch_id: string;
            /** Format: date-time */
            first_sampled_at: string;
            n: number;
            bias: components["schemas"]["AnalyteValues"];
        };
        /**
         * @description `active`: the reply the rig got; `shadow`: the shadow model on the same spectrum; `rescore`: a re-scoring job.
         * @enum {string}
         */
        PredictionRole: "active" | "shadow" | "rescore";
        LoggedPrediction: {
            /** @description Shared by the active, shadow and re-scored records of one spectrum. */
            prediction_id: string;
            /**
             * Format: date-time
             * @description When the server received the predict.
             */
            time: string;
            model_version: string;
            role: components["schemas"]["PredictionRole"];
            concentrations: components["schemas"]["AnalyteValues"];
            confidence?: components["schemas"]["AnalyteValues"];
            /** Format: double */
            t2_reduced?: number;
            /** Format: double */
            q_reduced?: number;
            batch_id?: string;
            port?: string;
            /** Format: double */
            column_index?: number;
            /**
             * Format: double
             * @description As the rig sent it in `spectrum.scan_seq`.
             */
            scan_seq?: number;
            /** Format: double */
            channel?: number;
            /** Format: double */
            integration_ms?: number;
            contributions?: components["schemas"]["PredictContributions"];
        };
        PredictionRecords: {
            prediction_id: string;
            /** @description The log kept the spectrum (`-log-spectra`), so the page can draw it. */
            spectrum_logged: boolean;
            /**
             * @description The active record first, then the shadow's and the re-scoring
             *     jobs'. `contributions` is present on a record whose
             *     contributions the log stored (only here: `GET /predictions`
             *     never carries them).
             */
            records: components["schemas"]["LoggedPrediction"][];
        };
        PredictionLogPage: {
            predictions: components["schemas"]["LoggedPrediction"][];
            next_cursor: string | null;
        };
        BatchSummary: {
            batch_id: string;
            /**
             * Format: date-time
             * @description The time of the batch's first spectrum (active record).
             */
            first_time: string;
            /** Format: date-time */
            last_time: string;
            /**
             * Format: int64
             * @description The batch's spectra (active records) in the log.
             */
            count: number;
            /** @description The versions that scored the batch as the active model, the shadow or a re-scoring job, in byte order. */
            models: string[];
            /** @description Versions that scored the batch beyond those listed. */
            more_models: number;
            /** @description The batch is marked as a reference batch. */
            reference: boolean;
        };
        BatchList: {
            batches: components["schemas"]["BatchSummary"][];
            next_cursor: string | null;
        };
        TrajectoryPoint: {
            prediction_id: string;
            /** Format: date-time */
            time: string;
            /**
             * Format: double
             * @description Seconds since the batch's first spectrum, or the scan_seq (the trajectory's `maturity`).
             */
            maturity: number;
            /** @description The active model that answered the rig. */
            model_version: string;
            concentrations: components["schemas"]["AnalyteValues"];
            confidence?: components["schemas"]["AnalyteValues"];
            /** Format: double */
            t2_reduced?: number;
            /** Format: double */
            q_reduced?: number;
            /** Format: double */
            scan_seq?: number;
        };
        BatchTrajectory: {
            batch_id: string;
            maturity: components["schemas"]["BatchMaturity"];
            /**
             * Format: date-time
             * @description The time of the batch's first spectrum.
             */
            start_time: string;
            /** @description The batch is marked as a reference batch. */
            reference: boolean;
            /** @description The batch has more than 10,000 spectra; the trajectory holds the first 10,000. */
            truncated: boolean;
            /** @description Spectra left out for want of a maturity (no scan_seq, with `maturity=scan_seq`). */
            unplaced: number;
            points: components["schemas"]["TrajectoryPoint"][];
        };
        /**
         * @description `time`: seconds since the batch's first spectrum; `scan_seq`: the scan_seq the rig sent.
         * @enum {string}
         */
        BatchMaturity: "time" | "scan_seq";
        ReferenceBatch: {
            batch_id: string;
            /** Format: date-time */
            marked_at: string;
            /** @description The name of the token that marked it; absent without authentication. */
            marked_by?: string;
            /** @description This request marked the batch (false when it was marked already). */
            created: boolean;
        };
        PredictionLogHealth: {
            /**
             * Format: int64
             * @description Records committed since start.
             */
            recorded: number;
            /**
             * Format: int64
             * @description Records dropped since start because the log's queue was full (the reply never waits for the log).
             */
            dropped: number;
            /**
             * Format: int64
             * @description Records lost since start because their batch failed to commit
             *     (full disk, I/O error). While records are being lost, and for
             *     10 minutes after the last loss, `status` is `degraded`.
             */
            write_failed?: number;
            queue_depth?: number;
            /** Format: int64 */
            size_bytes?: number;
            /** Format: date-time */
            last_commit_at?: string;
            /**
             * Format: double
             * @description How long the oldest record not yet committed has waited (0 when
             *     none waits). The log promises that every prediction answered
             *     more than `promise_seconds` before a kill -9 is in the log, or
             *     counted in `dropped` or `write_failed`; past it `status` is
             *     `degraded` with a reason starting `prediction_log_behind`.
             */
            oldest_wait_seconds?: number;
            /**
             * Format: double
             * @description The longest a record should wait for its commit (1 s).
             */
            promise_seconds?: number;
        };
        RescoreResult: {
            version: string;
            /** Format: date-time */
            since?: string;
            /** Format: date-time */
            until?: string;
            /**
             * Format: int64
             * @description Logged spectra scored.
             */
            spectra: number;
        };
        /** @description Request envelope on the prediction channel; `type` names its schema. */
        ChannelRequest: components["schemas"]["PingRequest"] | components["schemas"]["PredictRequest"] | components["schemas"]["ModelInfoRequest"];
        /**
         * @description Reply envelope on the prediction channel; `type` names its schema.
         *     A failed `ping`, `predict` or `model_info` is answered with that
         *     request's reply type (`pong`, `predict_reply`, `model_info_reply`),
         *     `error` set and `body` an empty map; `error` replies answer only a
         *     request whose type is unknown or that could not be decoded.
         */
        ChannelReply: components["schemas"]["PongReply"] | components["schemas"]["PredictReply"] | components["schemas"]["ModelInfoReply"] | components["schemas"]["ErrorReply"];
        /**
         * @description Envelope version; always 1. Another integer gets `UNSUPPORTED_VERSION`.
         * @enum {integer}
         */
        ProtocolVersion: 1;
        /**
         * @description Unique id of the message (UUID text form recommended), valid
         *     UTF-8. The server limits it to 256 *bytes*; `maxLength` counts
         *     characters, so an id of multi-byte characters can pass this
         *     schema and still be refused with MALFORMED_MESSAGE.
         */
        MessageId: string;
        /**
         * Format: double
         * @description Seconds since the Unix epoch; optional, and `nil` counts as absent.
         */
        RequestTimestamp: number | null;
        /** @description Ignored by the server; `nil` counts as absent. */
        IgnoredBody: Record<string, never> | null;
        /** @description An empty map, the body of every failed reply. */
        EmptyBody: Record<string, never>;
        PingRequest: {
            v: components["schemas"]["ProtocolVersion"];
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            type: "ping";
            id: components["schemas"]["MessageId"];
            ts?: components["schemas"]["RequestTimestamp"];
            body?: components["schemas"]["IgnoredBody"];
        };
        PredictRequest: {
            v: components["schemas"]["ProtocolVersion"];
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            type: "predict";
            id: components["schemas"]["MessageId"];
            ts?: components["schemas"]["RequestTimestamp"];
            body: components["schemas"]["PredictRequestBody"];
        };
        ModelInfoRequest: {
            v: components["schemas"]["ProtocolVersion"];
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            type: "model_info";
            id: components["schemas"]["MessageId"];
            ts?: components["schemas"]["RequestTimestamp"];
            body?: components["schemas"]["ModelInfoRequestBody"];
        };
        /**
         * @description Optional; `nil` or `{}` asks for the `ModelInfo` fields every reply
         *     carries. Unknown keys are ignored. A malformed `include` is
         *     `INVALID_REQUEST`.
         */
        ModelInfoRequestBody: {
            /**
             * @description Optional fields to add to the reply: `wavenumbers` (the model's
             *     axis). Names this server does not know are ignored, so a
             *     client checks that the reply holds what it asked for.
             */
            include?: string[] | null;
        } | null;
        /** @description Fresh id of this reply (UUID text form). */
        ReplyId: string;
        /** @description The request's `id`; the empty string when the request could not be decoded far enough to read it. */
        CorrelationId: string;
        /**
         * Format: double
         * @description Seconds since the Unix epoch when the reply was made.
         */
        ReplyTimestamp: number;
        PongReply: {
            v: components["schemas"]["ProtocolVersion"];
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            type: "pong";
            id: components["schemas"]["ReplyId"];
            correlation_id: components["schemas"]["CorrelationId"];
            ts: components["schemas"]["ReplyTimestamp"];
            /** @description PongBody on success; an empty map when `error` is set. */
            body: components["schemas"]["PongBody"] | components["schemas"]["EmptyBody"];
            /** @description Null on success. */
            error: components["schemas"]["ChannelError"] | null;
        };
        PredictReply: {
            v: components["schemas"]["ProtocolVersion"];
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            type: "predict_reply";
            id: components["schemas"]["ReplyId"];
            correlation_id: components["schemas"]["CorrelationId"];
            ts: components["schemas"]["ReplyTimestamp"];
            /** @description PredictReplyBody on success; an empty map when `error` is set. */
            body: components["schemas"]["PredictReplyBody"] | components["schemas"]["EmptyBody"];
            /** @description Null on success. */
            error: components["schemas"]["ChannelError"] | null;
        };
        ModelInfoReply: {
            v: components["schemas"]["ProtocolVersion"];
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            type: "model_info_reply";
            id: components["schemas"]["ReplyId"];
            correlation_id: components["schemas"]["CorrelationId"];
            ts: components["schemas"]["ReplyTimestamp"];
            /** @description ModelInfo on success; an empty map when `error` is set. */
            body: components["schemas"]["ModelInfo"] | components["schemas"]["EmptyBody"];
            /** @description Null on success. */
            error: components["schemas"]["ChannelError"] | null;
        };
        ErrorReply: {
            v: components["schemas"]["ProtocolVersion"];
            /**
             * @description discriminator enum property added by openapi-typescript
             * @enum {string}
             */
            type: "error";
            id: components["schemas"]["ReplyId"];
            correlation_id: components["schemas"]["CorrelationId"];
            ts: components["schemas"]["ReplyTimestamp"];
            body: components["schemas"]["EmptyBody"];
            error: components["schemas"]["ChannelError"];
        };
        ChannelError: {
            /**
             * @description `INVALID_REQUEST` on this channel: a predict whose `options` the
             *     server refuses (a `contributions` count out of 0-64 or of the
             *     wrong type, a repeated option key) or that asks for
             *     contributions from a model that cannot give them (messages.md
             *     section 4).
             * @enum {string}
             */
            code: "MODEL_NOT_LOADED" | "INVALID_SPECTRUM" | "SPECTRUM_OUT_OF_RANGE" | "UNSUPPORTED_VERSION" | "UNKNOWN_TYPE" | "MALFORMED_MESSAGE" | "MESSAGE_TOO_LARGE" | "SERVER_BUSY" | "INTERNAL_ERROR" | "INVALID_REQUEST";
            message: string;
            retryable: boolean;
        };
        PongBody: {
            server_version: string;
            /** @enum {integer} */
            protocol_version: 1;
            /** @description Active model version; the empty string when no model is loaded. */
            model_version: string;
            /** Format: double */
            uptime_seconds: number;
        };
        Spectrum: {
            /** @description Strictly increasing, cm-1; length equals the model's `wavenumber_count`. */
            wavenumbers: number[];
            /** @description Same length as `wavenumbers`. */
            intensities: number[];
            channel?: number;
            integration_ms?: number;
            scan_seq?: number;
        };
        PredictContext: {
            batch_id?: string;
            port?: string;
            column_index?: number;
        };
        PredictRequestBody: {
            spectrum: components["schemas"]["Spectrum"];
            context?: components["schemas"]["PredictContext"];
            options?: components["schemas"]["PredictOptions"];
        };
        /**
         * @description What the reply should carry beyond the prediction (messages.md
         *     section 3.2). Without it, or with `{}`, the reply is the plain
         *     predict_reply. Unknown keys are ignored, as everywhere on the
         *     channel; `nil` counts as absent.
         */
        PredictOptions: {
            /**
             * @description K: add `contributions` to the reply, with the K variables that
             *     contribute most to T2 and to Q (0: the totals and region sums
             *     only). An integral float is accepted. Out of range, or a model
             *     without T2 and Q: `INVALID_REQUEST`.
             */
            contributions?: number;
        };
        /** @description One number per component the active model predicts (all three for a three-target model). */
        ComponentValues: {
            /** Format: double */
            EPA?: number;
            /** Format: double */
            DHA?: number;
            /** Format: double */
            DPA?: number;
        };
        /**
         * @description Per component, in [0, 1]; see messages.md section 8. Always present;
         *     a component whose confidence cannot be computed is left out, so the
         *     map may be empty.
         */
        ConfidenceValues: {
            /** Format: double */
            EPA?: number;
            /** Format: double */
            DHA?: number;
            /** Format: double */
            DPA?: number;
        };
        /**
         * @description Multivariate statistics of the spectrum against the calibration; a key
         *     is present only when the model allows it to be computed. See
         *     messages.md for formulas.
         */
        PredictDiagnostics: {
            /** Format: double */
            t2?: number;
            /** Format: double */
            t2_limit?: number;
            /** Format: double */
            t2_reduced?: number;
            /** Format: double */
            q?: number;
            /** Format: double */
            q_limit?: number;
            /** Format: double */
            q_reduced?: number;
            /** Format: double */
            leverage?: number;
        };
        PredictReplyBody: {
            concentrations: components["schemas"]["ComponentValues"];
            confidence: components["schemas"]["ConfidenceValues"];
            model_version: string;
            /** Format: double */
            inference_ms: number;
            diagnostics?: components["schemas"]["PredictDiagnostics"];
            contributions?: components["schemas"]["PredictContributions"];
        };
        /**
         * @description Present only when the request set `options.contributions`: which
         *     variables make up T2 and Q (definitions in messages.md section 8.1).
         *     A key is present when the model computes the statistic, as in
         *     `diagnostics`.
         */
        PredictContributions: {
            q?: components["schemas"]["ContributionSummary"];
            t2?: components["schemas"]["ContributionSummary"];
        };
        ContributionSummary: {
            /**
             * Format: double
             * @description The statistic itself, equal to `diagnostics.q` or `diagnostics.t2`.
             */
            total: number;
            /** @description The K variables with the largest contribution, largest first. */
            top: components["schemas"]["VariableContribution"][];
            /**
             * @description The contributions summed over each of the model's regions, in
             *     the model's order (one region, the whole axis, for a model
             *     without regions). They add up to `total`.
             */
            regions: components["schemas"]["RegionContribution"][];
        };
        VariableContribution: {
            /**
             * Format: double
             * @description The variable's axis point, cm-1.
             */
            wavenumber: number;
            /** Format: double */
            value: number;
        };
        RegionContribution: {
            region: components["schemas"]["WavenumberRegion"];
            /** Format: double */
            value: number;
        };
    };
    responses: {
        /** @description The registry has not changed since the `ETag` sent in `If-None-Match`; no body. */
        NotModified: {
            headers: {
                ETag: components["headers"]["ETag"];
                [name: string]: unknown;
            };
            content?: never;
        };
        /**
         * @description `UNAUTHORIZED`: authentication is on and the request carries no
         *     token, or one the server does not know.
         */
        Unauthorized: {
            headers: {
                /** @description `Bearer realm="ramanserve"`, with `error="invalid_token"` when a token was sent but is not known. */
                "WWW-Authenticate"?: string;
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorResponse"];
            };
        };
        /**
         * @description `FORBIDDEN`: the token is known, but its role (`read`) does not
         *     allow this operation; the message names the role needed
         *     (`operate`).
         */
        Forbidden: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorResponse"];
            };
        };
        /** @description The body exceeds the configured limit (`PAYLOAD_TOO_LARGE`). */
        PayloadTooLarge: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorResponse"];
            };
        };
        /** @description The body's content type is not accepted (`UNSUPPORTED_MEDIA_TYPE`). */
        UnsupportedMediaType: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorResponse"];
            };
        };
        /** @description Unspecified server fault (`INTERNAL_ERROR`). */
        InternalError: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorResponse"];
            };
        };
        /**
         * @description `SHUTTING_DOWN`: the server stopped while the body was arriving; or
         *     `SERVER_BUSY`: no regular connection could be freed for this one
         *     (each has a request in progress or has just been opened), and
         *     this connection, from the health reserve, may only ask
         *     `GET /health`. Both are `retryable: true`.
         */
        Unavailable: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorResponse"];
            };
        };
        /**
         * @description `SERVER_BUSY`: both report slots (shared by the review, spectrum
         *     and batch pages, performance reports, exports and axes) stayed
         *     taken for 5 s; `retryable: true`.
         */
        ReportSlotBusy: {
            headers: {
                /** @description Seconds to wait before retrying; 5. */
                "Retry-After"?: number;
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorResponse"];
            };
        };
        /**
         * @description The registry's disk cannot take a write (`INSUFFICIENT_STORAGE`):
         *     full, read-only or over quota. Nothing was changed; `retryable: true`
         *     once space is freed.
         */
        InsufficientStorage: {
            headers: {
                /** @description Seconds to wait before retrying; 30. */
                "Retry-After"?: number;
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorResponse"];
            };
        };
        /** @description Any other failure (for example 404 `NOT_FOUND`, 405 `METHOD_NOT_ALLOWED`, 503 `SERVER_BUSY`). */
        DefaultError: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorResponse"];
            };
        };
    };
    parameters: {
        /**
         * @description ETags the client holds (or `*`); when one is the current one the
         *     answer is 304 with no body.
         */
        IfNoneMatch: string;
        /** @description A batch id as the rig sent it in the predicts' `context` (percent-encoded in the path). */
        BatchId: string;
        /** @description What the trajectory is drawn against; absent means `time`. */
        Maturity: components["schemas"]["BatchMaturity"];
        /** @description The component on the review page's scores plot's horizontal axis, 1..A (default 1). */
        ScoresX: number;
        /** @description The component on the scores plot's vertical axis, 1..A, not `scores_x` (default 2). */
        ScoresY: number;
        /** @description The analyte whose measured concentration colours the scores plot's points (default the model's first). */
        ScoresColor: "EPA" | "DHA" | "DPA";
    };
    requestBodies: never;
    headers: {
        /**
         * @description The registry's state as a strong entity tag (quoted), the same on
         *     `GET /model/list`, `GET /model/info` and `GET /model/{version}`
         *     while nothing changes; for `If-None-Match` and for `If-Match` on
         *     `POST /model/load`.
         */
        ETag: string;
        /** @description The path of the accepted job, `/training/<job_id>`. */
        JobLocation: string;
    };
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    loadModel: {
        parameters: {
            query?: never;
            header?: {
                /**
                 * @description The registry's `ETag` as a model route returned it (quoted),
                 *     or `*` (any state). A list of tags matches when one of them does.
                 */
                "If-Match"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["LoadModelRequest"];
            };
        };
        responses: {
            /** @description The model is active. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["LoadResult"];
                };
            };
            /**
             * @description `INVALID_REQUEST` (also: `source: file` with a reserved version
             *     name, `load`, `list`, `info` or `shadow`), `MALFORMED_JSON`, `MODEL_NOT_FOUND`,
             *     `MODEL_CORRUPTED`, `UNSAFE_MODEL`, `MODEL_UNSUPPORTED`, `MODEL_TARGETS_UNKNOWN`,
             *     `PATH_NOT_ALLOWED` or `VERSION_EXISTS`. The previous model stays active.
             */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            /**
             * @description `LOAD_IN_PROGRESS`: another load is in progress; retry after
             *     about one second. `MODEL_STATUS_MISMATCH` (not retryable): the
             *     version exists with another status than `source` names; the
             *     message names it.
             */
            409: {
                headers: {
                    /** @description Seconds to wait before retrying (`LOAD_IN_PROGRESS` only); always 1. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /**
             * @description `PRECONDITION_FAILED`: `If-Match` is not the registry's current
             *     `ETag`, or `expected_active` is not the active version; the
             *     message names the active version. Nothing was changed.
             */
            412: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            413: components["responses"]["PayloadTooLarge"];
            415: components["responses"]["UnsupportedMediaType"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["Unavailable"];
            507: components["responses"]["InsufficientStorage"];
            default: components["responses"]["DefaultError"];
        };
    };
    listModels: {
        parameters: {
            query?: never;
            header?: {
                /**
                 * @description ETags the client holds (or `*`); when one is the current one the
                 *     answer is 304 with no body.
                 */
                "If-None-Match"?: components["parameters"]["IfNoneMatch"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The registry. */
            200: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ModelList"];
                };
            };
            304: components["responses"]["NotModified"];
            401: components["responses"]["Unauthorized"];
            500: components["responses"]["InternalError"];
            default: components["responses"]["DefaultError"];
        };
    };
    getModelInfo: {
        parameters: {
            query?: never;
            header?: {
                /**
                 * @description ETags the client holds (or `*`); when one is the current one the
                 *     answer is 304 with no body.
                 */
                "If-None-Match"?: components["parameters"]["IfNoneMatch"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The active model. */
            200: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ModelInfo"];
                };
            };
            304: components["responses"]["NotModified"];
            401: components["responses"]["Unauthorized"];
            /** @description No model is loaded (`MODEL_NOT_LOADED`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            500: components["responses"]["InternalError"];
            default: components["responses"]["DefaultError"];
        };
    };
    getModel: {
        parameters: {
            query?: never;
            header?: {
                /**
                 * @description ETags the client holds (or `*`); when one is the current one the
                 *     answer is 304 with no body.
                 */
                "If-None-Match"?: components["parameters"]["IfNoneMatch"];
            };
            path: {
                /**
                 * @description A registry version. `load`, `list`, `info` and `shadow` name the routes
                 *     above; the registry gives no model those names (a file adopted
                 *     under one of them is listed as `<name>-1`, and an import under
                 *     one is 400 `INVALID_REQUEST`), so `GET /model/load` or
                 *     `DELETE /model/list` is 405 `METHOD_NOT_ALLOWED` with `Allow`.
                 */
                version: components["schemas"]["Version"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The version. */
            200: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ModelDetail"];
                };
            };
            304: components["responses"]["NotModified"];
            /** @description The version name does not match `Version` (`INVALID_REQUEST`). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            401: components["responses"]["Unauthorized"];
            /** @description The version is not in the registry (`MODEL_NOT_FOUND`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            500: components["responses"]["InternalError"];
            default: components["responses"]["DefaultError"];
        };
    };
    deleteModel: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description A registry version. `load`, `list`, `info` and `shadow` name the routes
                 *     above; the registry gives no model those names (a file adopted
                 *     under one of them is listed as `<name>-1`, and an import under
                 *     one is 400 `INVALID_REQUEST`), so `GET /model/load` or
                 *     `DELETE /model/list` is 405 `METHOD_NOT_ALLOWED` with `Allow`.
                 */
                version: components["schemas"]["Version"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The version is gone. */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The version name does not match `Version` (`INVALID_REQUEST`). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            /** @description The version is not in the registry (`MODEL_NOT_FOUND`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /**
             * @description `MODEL_ACTIVE`: the version is active. `LOAD_IN_PROGRESS`
             *     (`retryable: true`, `Retry-After: 1`): a load or another delete
             *     is running. `MODEL_BUSY` (`retryable: true`, `Retry-After: 5`):
             *     a re-scoring job of the version is queued or running, or being
             *     queued; the message names the job, which
             *     `GET /training/{jobId}` follows and
             *     `POST /training/{jobId}/cancel` ends.
             */
            409: {
                headers: {
                    /** @description Seconds to wait before retrying (`LOAD_IN_PROGRESS` and `MODEL_BUSY` only); 1 and 5. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            500: components["responses"]["InternalError"];
            507: components["responses"]["InsufficientStorage"];
            default: components["responses"]["DefaultError"];
        };
    };
    getModelAxis: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                version: components["schemas"]["Version"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The axis. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ModelAxis"];
                };
            };
            /** @description The version name does not match `Version` (`INVALID_REQUEST`). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            401: components["responses"]["Unauthorized"];
            /** @description The version is not in the registry (`MODEL_NOT_FOUND`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            500: components["responses"]["InternalError"];
            /** @description No review slot was free within 5 s (`SERVER_BUSY`, `retryable: true`). */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying; 5. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            default: components["responses"]["DefaultError"];
        };
    };
    getModelReport: {
        parameters: {
            query?: {
                /** @description The component on the review page's scores plot's horizontal axis, 1..A (default 1). */
                scores_x?: components["parameters"]["ScoresX"];
                /** @description The component on the scores plot's vertical axis, 1..A, not `scores_x` (default 2). */
                scores_y?: components["parameters"]["ScoresY"];
                /** @description The analyte whose measured concentration colours the scores plot's points (default the model's first). */
                scores_color?: components["parameters"]["ScoresColor"];
            };
            header?: never;
            path: {
                version: components["schemas"]["Version"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The page. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/html": string;
                };
            };
            /** @description The version name does not match `Version`, or the scores asked for are not two different components of the model (`INVALID_REQUEST`). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            401: components["responses"]["Unauthorized"];
            /** @description The version is not in the registry (`MODEL_NOT_FOUND`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            500: components["responses"]["InternalError"];
            503: components["responses"]["ReportSlotBusy"];
            default: components["responses"]["DefaultError"];
        };
    };
    getModelReview: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                version: components["schemas"]["Version"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The figures. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ModelReview"];
                };
            };
            /** @description The version name does not match `Version` (`INVALID_REQUEST`). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            401: components["responses"]["Unauthorized"];
            /** @description The version is not in the registry (`MODEL_NOT_FOUND`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The version has no record of its training (`NO_TRAINING_RECORD`). */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            500: components["responses"]["InternalError"];
            default: components["responses"]["DefaultError"];
        };
    };
    exportModel: {
        parameters: {
            query?: {
                format?: "joblib" | "npz";
            };
            header?: never;
            path: {
                version: components["schemas"]["Version"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The file. */
            200: {
                headers: {
                    /** @description `attachment; filename="<version>.joblib"` or `.npz`. */
                    "Content-Disposition": string;
                    [name: string]: unknown;
                };
                content: {
                    "application/octet-stream": Blob;
                };
            };
            /** @description The version name does not match `Version`, or `format` is neither `joblib` nor `npz` (`INVALID_REQUEST`); the version's file no longer matches what the registry recorded (`MODEL_CORRUPTED`). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            401: components["responses"]["Unauthorized"];
            /** @description The version is not in the registry (`MODEL_NOT_FOUND`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            500: components["responses"]["InternalError"];
            503: components["responses"]["ReportSlotBusy"];
            default: components["responses"]["DefaultError"];
        };
    };
    getShadow: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The shadow, or none. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ShadowStatus"];
                };
            };
            401: components["responses"]["Unauthorized"];
            default: components["responses"]["DefaultError"];
        };
    };
    setShadow: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ShadowRequest"];
            };
        };
        responses: {
            /** @description The shadow is set. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ShadowStatus"];
                };
            };
            /** @description `INVALID_REQUEST`, `MALFORMED_JSON`, `MODEL_NOT_FOUND` (no such version), or `MODEL_CORRUPTED` / `UNSAFE_MODEL` / `MODEL_UNSUPPORTED` (the file cannot be served). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            /** @description `SHADOW_IS_ACTIVE`: the version is the active model; or `LOAD_IN_PROGRESS` (`retryable: true`, `Retry-After: 1`): a load, a delete or another shadow change is running. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            415: components["responses"]["UnsupportedMediaType"];
            507: components["responses"]["InsufficientStorage"];
            default: components["responses"]["DefaultError"];
        };
    };
    clearShadow: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description No shadow is set now. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ShadowStatus"];
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            /** @description `LOAD_IN_PROGRESS` (`retryable: true`, `Retry-After: 1`): a load, a delete or another shadow change is running. */
            409: {
                headers: {
                    /** @description Seconds to wait before retrying; 1. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            507: components["responses"]["InsufficientStorage"];
            default: components["responses"]["DefaultError"];
        };
    };
    getModelPerformance: {
        parameters: {
            query?: {
                since?: string;
                until?: string;
            };
            header?: never;
            path: {
                version: components["schemas"]["Version"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The statistics; n is 0 when nothing matched. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ModelPerformance"];
                };
            };
            /** @description `INVALID_REQUEST`: a malformed version, a bad time, or `since` not before `until`. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            401: components["responses"]["Unauthorized"];
            /** @description `MODEL_NOT_FOUND`: neither in the registry nor in the prediction log. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            503: components["responses"]["ReportSlotBusy"];
            default: components["responses"]["DefaultError"];
        };
    };
    rescoreModel: {
        parameters: {
            query?: {
                since?: string;
                until?: string;
            };
            header?: never;
            path: {
                version: components["schemas"]["Version"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The job is queued. */
            202: {
                headers: {
                    Location: components["headers"]["JobLocation"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TrainingJobAccepted"];
                };
            };
            /** @description `INVALID_REQUEST` (a bad time or range) or `MODEL_NOT_FOUND`. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            /** @description `NO_LOGGED_SPECTRA`: the server does not log spectra, or none lies in the range; `SHADOW_IS_ACTIVE` is not used here: re-scoring the active version is allowed. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description `TRAINING_QUEUE_FULL` (retryable). */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            default: components["responses"]["DefaultError"];
        };
    };
    postLabResults: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["LabResult"][];
                "text/csv": string;
            };
        };
        responses: {
            /** @description What matched, what replaced earlier results, and why the rest did not match. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["LabResultsOutcome"];
                };
            };
            /** @description `INVALID_LAB_RESULTS`: a record cannot be parsed (the message names its index or line and the field); nothing was stored. `MALFORMED_JSON` or `INVALID_REQUEST` for a body that is not an array of LabResult. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            413: components["responses"]["PayloadTooLarge"];
            415: components["responses"]["UnsupportedMediaType"];
            507: components["responses"]["InsufficientStorage"];
            default: components["responses"]["DefaultError"];
        };
    };
    listPredictions: {
        parameters: {
            query?: {
                batch_id?: string;
                since?: string;
                until?: string;
                /** @description Page size, 1 to 10000; absent means 1000. */
                limit?: number;
                /** @description The `next_cursor` of the previous page (JSON), or of the `X-Next-Cursor` header (CSV). */
                cursor?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of the log. */
            200: {
                headers: {
                    /** @description The next page's cursor, absent on the last page (also in the JSON body). */
                    "X-Next-Cursor"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PredictionLogPage"];
                    "text/csv": string;
                };
            };
            /** @description `INVALID_REQUEST` (a bad time or limit) or `INVALID_CURSOR`. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            401: components["responses"]["Unauthorized"];
            default: components["responses"]["DefaultError"];
        };
    };
    listBatches: {
        parameters: {
            query?: {
                /** @description Page size, 1 to 1000; absent means 100. */
                limit?: number;
                /** @description The `next_cursor` of the previous page. */
                cursor?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of batches. */
            200: {
                headers: {
                    /** @description The next page's cursor, absent on the last page (also in the body). */
                    "X-Next-Cursor"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BatchList"];
                };
            };
            /** @description `INVALID_REQUEST` (a bad limit) or `INVALID_CURSOR`. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            401: components["responses"]["Unauthorized"];
            default: components["responses"]["DefaultError"];
        };
    };
    getBatch: {
        parameters: {
            query?: {
                /** @description What the trajectory is drawn against; absent means `time`. */
                maturity?: components["parameters"]["Maturity"];
            };
            header?: never;
            path: {
                /** @description A batch id as the rig sent it in the predicts' `context` (percent-encoded in the path). */
                batch_id: components["parameters"]["BatchId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The trajectory. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BatchTrajectory"];
                };
            };
            /** @description `INVALID_REQUEST`: the batch id or the maturity is outside this document. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            401: components["responses"]["Unauthorized"];
            /** @description `BATCH_NOT_FOUND`: the log holds no spectrum of this batch. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            default: components["responses"]["DefaultError"];
        };
    };
    markReferenceBatch: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description A batch id as the rig sent it in the predicts' `context` (percent-encoded in the path). */
                batch_id: components["parameters"]["BatchId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The batch is marked; `created` says whether by this request. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ReferenceBatch"];
                };
            };
            /** @description `INVALID_REQUEST`: the batch id is outside this document. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            /** @description `BATCH_NOT_FOUND`: the log holds no spectrum of this batch. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description `REFERENCE_BATCHES_FULL`: 20 batches are marked already. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            default: components["responses"]["DefaultError"];
        };
    };
    unmarkReferenceBatch: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description A batch id as the rig sent it in the predicts' `context` (percent-encoded in the path). */
                batch_id: components["parameters"]["BatchId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The batch is not a reference batch (any more). */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `INVALID_REQUEST`: the batch id is outside this document. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            default: components["responses"]["DefaultError"];
        };
    };
    getBatchReport: {
        parameters: {
            query?: {
                /** @description What the trajectory is drawn against; absent means `time`. */
                maturity?: components["parameters"]["Maturity"];
            };
            header?: never;
            path: {
                /** @description A batch id as the rig sent it in the predicts' `context` (percent-encoded in the path). */
                batch_id: components["parameters"]["BatchId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The page. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/html": string;
                };
            };
            /** @description `INVALID_REQUEST`: the batch id or the maturity is outside this document. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            401: components["responses"]["Unauthorized"];
            /** @description `BATCH_NOT_FOUND`: the log holds no spectrum of this batch. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            503: components["responses"]["ReportSlotBusy"];
            default: components["responses"]["DefaultError"];
        };
    };
    getPrediction: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description A `prediction_id` of `GET /predictions`. */
                predictionId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The spectrum's records. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PredictionRecords"];
                };
            };
            /** @description The id is not a UUID (`INVALID_REQUEST`). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            401: components["responses"]["Unauthorized"];
            /** @description The log holds no record of this id (`PREDICTION_NOT_FOUND`); retention may have deleted it. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            default: components["responses"]["DefaultError"];
        };
    };
    getPredictionReport: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                predictionId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The page. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/html": string;
                };
            };
            /** @description The id is not a UUID (`INVALID_REQUEST`). */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            401: components["responses"]["Unauthorized"];
            /** @description The log holds no record of this id (`PREDICTION_NOT_FOUND`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            503: components["responses"]["ReportSlotBusy"];
            default: components["responses"]["DefaultError"];
        };
    };
    listTrainingJobs: {
        parameters: {
            query?: {
                /** @description Page size, 1 to 200; absent means 50. */
                limit?: number;
                /** @description The `next_cursor` of the previous page. */
                cursor?: string;
                /** @description Only jobs in this state. */
                status?: components["schemas"]["TrainingJobStatus"];
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of jobs. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TrainingJobList"];
                };
            };
            /** @description `INVALID_REQUEST` (a parameter out of range) or `INVALID_CURSOR`. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            401: components["responses"]["Unauthorized"];
            500: components["responses"]["InternalError"];
            /** @description Training is not available in this build (`NOT_IMPLEMENTED`). */
            501: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            default: components["responses"]["DefaultError"];
        };
    };
    startTraining: {
        parameters: {
            query?: never;
            header?: {
                /**
                 * @description 1 to 255 characters of printable ASCII (no space), such as a
                 *     UUID the client chose for this one request; anything else is
                 *     400 `INVALID_REQUEST`.
                 */
                "Idempotency-Key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "multipart/form-data": components["schemas"]["TrainingUpload"];
            };
        };
        responses: {
            /** @description The job is queued. */
            202: {
                headers: {
                    Location: components["headers"]["JobLocation"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TrainingJobAccepted"];
                };
            };
            /** @description `INVALID_CSV`, `INVALID_METADATA`, `INVALID_TRAINING_OPTIONS`, `MISSING_PART` or `INVALID_REQUEST`. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            /**
             * @description The body stopped arriving for the idle limit, or fell below the
             *     minimum average rate (`REQUEST_TIMEOUT`; the message names the
             *     rate). The training place is freed.
             */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /**
             * @description `IDEMPOTENCY_KEY_IN_USE`: another request holds the
             *     `Idempotency-Key` and has not recorded its job yet;
             *     `retryable: true`.
             */
            409: {
                headers: {
                    /** @description Seconds to wait before retrying; 1. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /**
             * @description `PAYLOAD_TOO_LARGE`, `retryable: false`: the body exceeds
             *     `-max-upload-bytes`, or the data set alone would cross the
             *     training memory budget.
             */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            415: components["responses"]["UnsupportedMediaType"];
            /**
             * @description `IDEMPOTENCY_KEY_REUSED`: the `Idempotency-Key` was used within
             *     24 h for a request with another body. Nothing was changed.
             */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The training queue is full (`TRAINING_QUEUE_FULL`). */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            500: components["responses"]["InternalError"];
            /** @description Training is not available in this build (`NOT_IMPLEMENTED`). */
            501: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /**
             * @description `SERVER_BUSY`: the data set would fit the training memory
             *     budget, but other uploads and queued or running jobs hold the
             *     room it needs now; `retryable: true` with a `Retry-After`
             *     header. `SHUTTING_DOWN`: the server stopped while the body was
             *     arriving; `retryable: true`.
             */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying (`SERVER_BUSY`). */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            507: components["responses"]["InsufficientStorage"];
            default: components["responses"]["DefaultError"];
        };
    };
    getTrainingJob: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                jobId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The job. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TrainingJob"];
                };
            };
            401: components["responses"]["Unauthorized"];
            /** @description Unknown job id (`JOB_NOT_FOUND`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            500: components["responses"]["InternalError"];
            /** @description Training is not available in this build (`NOT_IMPLEMENTED`). */
            501: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            default: components["responses"]["DefaultError"];
        };
    };
    getTrainingReport: {
        parameters: {
            query?: {
                /** @description The component on the review page's scores plot's horizontal axis, 1..A (default 1). */
                scores_x?: components["parameters"]["ScoresX"];
                /** @description The component on the scores plot's vertical axis, 1..A, not `scores_x` (default 2). */
                scores_y?: components["parameters"]["ScoresY"];
                /** @description The analyte whose measured concentration colours the scores plot's points (default the model's first). */
                scores_color?: components["parameters"]["ScoresColor"];
            };
            header?: never;
            path: {
                jobId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The page. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/html": string;
                };
            };
            401: components["responses"]["Unauthorized"];
            /** @description Unknown job id (`JOB_NOT_FOUND`), or the job's model was deleted since (`MODEL_NOT_FOUND`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The job is not `done` (`JOB_NOT_DONE`). */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            500: components["responses"]["InternalError"];
            /** @description Training is not available in this build (`NOT_IMPLEMENTED`). */
            501: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            503: components["responses"]["ReportSlotBusy"];
            default: components["responses"]["DefaultError"];
        };
    };
    cancelTrainingJob: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                jobId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The job, now `failed` with `CANCELLED`. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TrainingJob"];
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            /** @description Unknown job id (`JOB_NOT_FOUND`). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The job already ended (`JOB_FINISHED`). */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            500: components["responses"]["InternalError"];
            /** @description Training is not available in this build (`NOT_IMPLEMENTED`). */
            501: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            507: components["responses"]["InsufficientStorage"];
            default: components["responses"]["DefaultError"];
        };
    };
    getHealth: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The server is up. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HealthStatus"];
                };
            };
            401: components["responses"]["Unauthorized"];
            default: components["responses"]["DefaultError"];
        };
    };
    getLivez: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The process runs. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Liveness"];
                };
            };
            401: components["responses"]["Unauthorized"];
            default: components["responses"]["DefaultError"];
        };
    };
    getReadyz: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Ready. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Readiness"];
                };
            };
            401: components["responses"]["Unauthorized"];
            /** @description Not ready (`NOT_READY`, `retryable: true`); `reasons` says why. */
            503: {
                headers: {
                    /** @description Seconds to wait before asking again; 1. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotReady"];
                };
            };
            default: components["responses"]["DefaultError"];
        };
    };
    getMetrics: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The current value of every metric. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            401: components["responses"]["Unauthorized"];
            default: components["responses"]["DefaultError"];
        };
    };
    getFleet: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The fleet as this replica sees it, oldest replica first. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Fleet"];
                };
            };
            401: components["responses"]["Unauthorized"];
            /**
             * @description `STORE_UNAVAILABLE`: the fleet's database cannot be reached now;
             *     `retryable: true`.
             */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying; 2. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            default: components["responses"]["DefaultError"];
        };
    };
    getOpenAPIYAML: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /**
             * @description The contract the server was built from: api/openapi.yaml byte for
             *     byte, as YAML text (a client that wants the parsed document asks
             *     for `GET /openapi.json`).
             */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/yaml": string;
                };
            };
            401: components["responses"]["Unauthorized"];
            default: components["responses"]["DefaultError"];
        };
    };
    getOpenAPIJSON: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The contract the server was built from. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": Record<string, never>;
                };
            };
            401: components["responses"]["Unauthorized"];
            default: components["responses"]["DefaultError"];
        };
    };
    getDocs: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The page. */
            200: {
                headers: {
                    /** @description `default-src 'none'; script-src 'sha256-…' 'sha256-…'; style-src 'unsafe-inline'; img-src data:; font-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'` */
                    "Content-Security-Policy"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "text/html": string;
                };
            };
            401: components["responses"]["Unauthorized"];
            default: components["responses"]["DefaultError"];
        };
    };
}
