package server

import (
	"net/http"

	"ramanserve/server/contract"
)

// The evidence routes of issue 13 (prediction log, shadow scoring, lab
// reconciliation, re-scoring) answer 501 while their service is not wired.

func notYet(what string) error {
	return contract.New(contract.NotImplemented, http.StatusNotImplemented, what+" is not implemented yet")
}
