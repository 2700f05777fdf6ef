package app

import (
	"log/slog"
	"time"

	"ramanserve/registry"
	"ramanserve/server"
	"ramanserve/trainer"
)

// Config is the whole process configuration; cmd/ramanserve fills it from
// flags and RAMAN_* environment variables.
type Config struct {
	HTTPAddr    string // e.g. ":5556"
	ZMQEndpoint string // e.g. "tcp://*:5555"
	RegistryDir string // e.g. "./var/registry"
	// Store is the URL of the PostgreSQL database every replica of a
	// fleet shares (postgres://…); "" keeps everything in RegistryDir
	// (the embedded store).
	Store          string
	AllowFileRoots []string // empty: the registry's import/ folder
	HTTP           server.HTTPConfig
	Channel        server.ChannelConfig
	Training       TrainingConfig
	Auth           server.AuthConfig // bearer tokens on the management channel
	Evidence       EvidenceConfig
	OPCUA          OPCUAConfig // the OPC UA server of live predictions; off when Addr is ""
	// ReadyWithoutModel makes GET /readyz answer 200 with no model loaded
	// (-ready-without-model).
	ReadyWithoutModel bool
	// DrainDelay is how long Shutdown keeps both channels serving after
	// it made GET /readyz answer 503, so that load balancers stop sending
	// before the ports close (-shutdown-delay; 0: at once).
	DrainDelay time.Duration
	Logger     *slog.Logger
	// WrapOpen, when set, wraps every model reader. It is a test seam: the
	// conformance suite uses it to make a load reliably slow.
	WrapOpen func(registry.OpenFunc) registry.OpenFunc
}

// transports is the transports' share of the configuration.
func (c Config) transports() server.Config {
	return server.Config{HTTPAddr: c.HTTPAddr, ZMQEndpoint: c.ZMQEndpoint, HTTP: c.HTTP, Channel: c.Channel, Auth: c.Auth}
}

// OPCUAConfig configures the OPC UA server (docs/opcua.md).
type OPCUAConfig struct {
	Addr          string // opc.tcp://HOST:PORT; "" keeps the server off
	AllowInsecure bool   // offer SecurityPolicy None too
	CertFile      string // the server's certificate (PEM or DER) and RSA key (PEM)
	KeyFile       string
	// TrustedDir holds the trusted client certificates; refused ones are
	// written to RejectedDir ("": the folder "rejected" beside TrustedDir).
	TrustedDir     string
	RejectedDir    string
	UncertainBelow float64 // a confidence below it makes a value Uncertain
}

// TrainingConfig configures training jobs.
type TrainingConfig struct {
	QueueSize int             // jobs waiting behind the running one; default 4
	Options   trainer.Options // folds, components, preprocessing
	// MaxMemoryBytes is the training memory budget (-max-training-memory):
	// every upload being parsed and every data set of a queued or running
	// job, with its training copies, is charged to it; an upload that would
	// cross it is refused 413. 0 means membudget.DefaultLimit(), a quarter
	// of physical memory.
	MaxMemoryBytes int64
	// Workers is how many training jobs a replica of a fleet runs at once
	// (-training-workers); 0 makes a replica that never trains. The
	// embedded store always runs one.
	Workers int
	// Lease is how long a fleet's training job stays with a runner that
	// stopped renewing it (a killed replica) before another replica takes
	// it over (-training-lease; 0: 20 s).
	Lease time.Duration
}

// TrainingMemoryOverhead is the fixed memory the process needs beside the
// training budget: the Go runtime and its garbage, HTTP and prediction
// buffers, loaded models, and the line buffers of the at most
// -training-queue + 1 uploads being parsed (about 1.5 MiB each). Peak RSS
// stays under the budget plus this; cmd/ramanserve sets the Go soft
// memory limit to their sum so the collector keeps garbage within it.
const TrainingMemoryOverhead = 128 << 20
