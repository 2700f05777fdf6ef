// Command ramandemo shows ramanserve end to end against a running server:
// it uploads a synthetic training set, follows the job's progress, loads
// the staged model and sends a few predictions over the prediction
// channel, printing them next to the true concentrations.
//
//	go run ./cmd/ramandemo -http http://localhost:5556 -zmq tcp://localhost:5555
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"ramanserve/client"
	"ramanserve/gen"
	"ramanserve/trainer/synth"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "ramandemo:", err)
		os.Exit(1)
	}
}

func run() error {
	httpBase := flag.String("http", "http://localhost:5556", "management base URL")
	zmqEndpoint := flag.String("zmq", "tcp://localhost:5555", "prediction channel endpoint")
	samples := flag.Int("samples", 300, "synthetic training samples to upload")
	predictions := flag.Int("predictions", 5, "predictions to send")
	seed := flag.Uint64("seed", uint64(time.Now().Unix()), "synthetic data seed")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	mgmt, err := client.NewManagement(*httpBase)
	if err != nil {
		return err
	}
	health, err := mgmt.GetHealthWithResponse(ctx)
	if err != nil {
		return fmt.Errorf("is the server running (make run)? %w", err)
	}
	if health.JSON200 == nil {
		return fmt.Errorf("health: %d %s", health.StatusCode(), health.Body)
	}
	fmt.Printf("server %s is %s\n", deref(health.JSON200.ServerVersion), health.JSON200.Status)

	// 1. Upload a synthetic training set, streamed as it is generated.
	fmt.Printf("uploading %d synthetic spectra\n", *samples)
	csv, csvWriter := io.Pipe()
	go func() {
		csvWriter.CloseWithError(synth.New(synth.Config{Seed: *seed}).WriteCSV(ctx, csvWriter, *samples))
	}()
	notes := "make demo"
	job, err := mgmt.StartTraining(ctx, gen.TrainingMeta{Operator: "demo", SourceBatches: &[]string{"synthetic"}, Notes: &notes}, csv)
	if err != nil {
		return fmt.Errorf("upload: %w", err)
	}

	// 2. Follow the job.
	var done *gen.TrainingJob
	for done == nil {
		res, err := mgmt.GetTrainingJobWithResponse(ctx, job.JobId)
		if err != nil {
			return err
		}
		if err := client.HTTPError(res.HTTPResponse, res.Body); err != nil {
			return fmt.Errorf("training job: %w", err)
		}
		j := res.JSON200
		bar := strings.Repeat("#", int(j.Progress*30)) + strings.Repeat(".", 30-int(j.Progress*30))
		fmt.Printf("\rtraining %s [%s] %3.0f%%", j.Status, bar, j.Progress*100)
		switch j.Status {
		case gen.Done:
			done = j
		case gen.Failed:
			fmt.Println()
			return fmt.Errorf("training failed: %s %s", j.Error.Code, j.Error.Message)
		default:
			time.Sleep(200 * time.Millisecond)
		}
	}
	fmt.Printf("\nnew model %s (cross-validated RMSE EPA %.2f, DHA %.2f, DPA %.2f g/L)\n", done.Result.NewVersion,
		num(done.Result.Metrics.Rmse.EPA), num(done.Result.Metrics.Rmse.DHA), num(done.Result.Metrics.Rmse.DPA))

	// 3. Activate it.
	load, err := mgmt.LoadModelWithResponse(ctx, nil, gen.LoadModelJSONRequestBody{Version: done.Result.NewVersion})
	if err != nil {
		return err
	}
	if err := client.HTTPError(load.HTTPResponse, load.Body); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	fmt.Printf("loaded %s in %d ms (previous: %q)\n", load.JSON200.LoadedVersion, load.JSON200.LoadTimeMs, load.JSON200.PreviousVersion)

	// 4. Predict over the prediction channel.
	pc, err := client.DialPrediction(ctx, *zmqEndpoint, client.PredictionOptions{Timeout: 5 * time.Second})
	if err != nil {
		return err
	}
	defer pc.Close()
	fmt.Printf("\n%-10s %-26s %-26s %s\n", "", "predicted EPA/DHA/DPA", "true EPA/DHA/DPA", "confidence")
	g := synth.New(synth.Config{Seed: *seed + 1})
	for i := 0; i < *predictions; i++ {
		s := g.Next()
		pr, err := pc.Predict(ctx, &client.Spectrum{Wavenumbers: synth.Axis(), Intensities: s.Intensities, Channel: 1, IntegrationMS: 500, ScanSeq: int64(i)}, nil)
		if err != nil {
			return fmt.Errorf("predict: %w", err)
		}
		c, cf := pr.Concentrations.Value, pr.Confidence.Value
		fmt.Printf("scan %-5d %7.2f %7.2f %7.2f    %7.2f %7.2f %7.2f    %.2f %.2f %.2f  (%.3f ms)\n", i,
			c[0], c[1], c[2], s.Conc[0], s.Conc[1], s.Conc[2], cf[0], cf[1], cf[2], pr.InferenceMS)
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func num(f *float64) float64 {
	if f == nil {
		return 0
	}
	return *f
}
