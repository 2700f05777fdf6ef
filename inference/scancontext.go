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
