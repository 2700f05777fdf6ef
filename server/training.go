package server

import (
	"context"
	"net/http"

	"ramanserve/gen"
	"ramanserve/server/contract"
)

// TrainingService runs training jobs; see package trainer.
type TrainingService interface{}

var errTrainingUnavailable = contract.New(contract.NotImplemented, http.StatusNotImplemented, "training is not available in this build")

// StartTraining accepts a training upload.
func (a *API) StartTraining(ctx context.Context, req gen.StartTrainingRequestObject) (gen.StartTrainingResponseObject, error) {
	return nil, errTrainingUnavailable
}

// GetTrainingJob reports a training job.
func (a *API) GetTrainingJob(ctx context.Context, req gen.GetTrainingJobRequestObject) (gen.GetTrainingJobResponseObject, error) {
	return nil, errTrainingUnavailable
}
