package inference

// ScanContext is what the rig said about where and how a spectrum was
// taken, beside the spectrum itself: the batch and sampling port, the
// column, the scan's sequence number, the detector channel and the
// integration time. Every field is optional (its Has* flag is false when
// the rig did not send it). The models never read it; the prediction log
// records it with each prediction so that lab results can be matched to
// the spectra of their batch.
type ScanContext struct {
	BatchID       string
	Port          string
	ColumnIndex   float64
	ScanSeq       float64
	Channel       float64
	IntegrationMS float64

	HasBatchID       bool
	HasPort          bool
	HasColumnIndex   bool
	HasScanSeq       bool
	HasChannel       bool
	HasIntegrationMS bool
}

// MaxContextTextBytes bounds the batch_id and port a ScanContext keeps, in
// bytes of UTF-8: a longer value is cut to it. The rig's own ids are a few
// dozen bytes; without a bound, each logged prediction could carry up to a
// request's size (1 MiB) of text into the log's queue and database. The
// lab's batch ids have the same bound (reconcile.MaxIDBytes), so a cut id
// could not have been matched anyway.
const MaxContextTextBytes = 128

// CutContextText returns b cut to at most MaxContextTextBytes, at a UTF-8
// character boundary.
func CutContextText(b []byte) []byte {
	if len(b) <= MaxContextTextBytes {
		return b
	}
	n := MaxContextTextBytes
	for n > 0 && b[n]&0xC0 == 0x80 { // b[n] continues the character before it
		n--
	}
	return b[:n]
}
