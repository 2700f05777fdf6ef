package registry

import "ramanserve/registry/store"

// The registry's record is defined with the contract of the stores that
// keep it (package registry/store); these are its names here.
type (
	// IndexStore keeps the index: see store.IndexStore for what every
	// implementation guarantees.
	IndexStore = store.IndexStore
	// ArtifactStore keeps the model files: see store.ArtifactStore for
	// what every implementation guarantees.
	ArtifactStore = store.ArtifactStore
	// Entry is one model in the registry.
	Entry = store.Entry
	// Status is a model's place in the registry.
	Status = store.Status
	// Metrics are the cross-validated figures of the chosen component count.
	Metrics = store.Metrics
	// Shape is what a model expects of a spectrum and does to it before
	// the regression.
	Shape = store.Shape
)

// The three statuses of the contract. At most one entry is StatusActive.
const (
	StatusActive   = store.StatusActive
	StatusStaged   = store.StatusStaged
	StatusArchived = store.StatusArchived
)

// ValidVersion reports whether v is an acceptable version name.
func ValidVersion(v string) bool { return store.ValidVersion(v) }
