package client

import (
	"encoding/json"
	"fmt"
	"net/http"

	"ramanserve/gen"
)

// Error is an error answer of either channel: the contract's code (the
// table of api/openapi.yaml; section 4 of api/messages.md), its message
// for humans, and whether the server says the same request may succeed
// when sent again (retryable). Programs dispatch on Code, never on Message.
type Error struct {
	Code      string
	Message   string
	Retryable bool
	// Status is the HTTP status of a management answer; 0 on the
	// prediction channel.
	Status int
}

// Error implements error.
func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
	}
	return e.Code + ": " + e.Message
}

// HTTPError turns a management answer outside 2xx into *Error, read from
// its ErrorResponse body; it returns nil for a 2xx status. Use it with the
// generated client's responses: client.HTTPError(res.HTTPResponse, res.Body).
// A body that is not an ErrorResponse (a proxy's page, say) still gives an
// *Error, with the code HTTP_<status> and the start of the body as message;
// it is retryable when the status itself says the condition is passing
// (429, 502, 503, 504), since no server envelope says otherwise.
func HTTPError(resp *http.Response, body []byte) error {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	var er gen.ErrorResponse
	if err := json.Unmarshal(body, &er); err != nil || er.Code == "" {
		msg := string(body)
		if len(msg) > 200 {
			msg = msg[:200]
		}
		return &Error{Code: fmt.Sprintf("HTTP_%d", resp.StatusCode), Message: msg, Status: resp.StatusCode, Retryable: transientStatus(resp.StatusCode)}
	}
	e := &Error{Code: er.Code, Message: er.Message, Status: resp.StatusCode}
	if er.Retryable != nil {
		e.Retryable = *er.Retryable
	}
	return e
}

// transientStatus reports the HTTP statuses that mean "try again later"
// whoever sent them (RFC 9110 sections 15.6.3-15.6.5, RFC 6585 section 4).
func transientStatus(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}
