package registry

import (
	"context"
	"fmt"
	"sort"

	"ramanserve/registry/store"
)

// CheckStores verifies a registry kept in any store (a fleet's database,
// where there is no directory for Check to read): every index entry's
// artifact is present and has the size and SHA-256 the entry recorded
// (the store's Open checks it), the active pointer and the shadow name
// entries, and every artifact is named by an entry. It reads only, and
// repairs nothing: a fleet's registry is repaired through its servers.
// Unlike Check it does not open the models through their readers, and
// reports its findings by artifact name; the report's Dir is label.
func CheckStores(ctx context.Context, label string, index store.IndexStore, artifacts store.ArtifactStore) (*CheckReport, error) {
	ix, _, err := index.ReadIndex(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: read the index: %w", store.ErrRegistry, err)
	}
	listed, err := artifacts.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: list the artifacts: %w", store.ErrRegistry, err)
	}
	rep := &CheckReport{Dir: label, Models: len(ix.Models)}
	find := func(file, problem string) { rep.Findings = append(rep.Findings, Finding{File: file, Problem: problem}) }
	present := make(map[string]bool, len(listed))
	for _, a := range listed {
		present[a.Name] = true
	}
	named := make(map[string]bool, len(ix.Models))
	for _, e := range ix.Models {
		named[e.File] = true
		if !present[e.File] {
			find(e.File, fmt.Sprintf("index entry %s has no artifact", e.Version))
			continue
		}
		a, err := artifacts.Open(ctx, e.File, store.Fingerprint{SizeBytes: e.SizeBytes, SHA256: e.SHA256}, maxArtifactBytes)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			find(e.File, fmt.Sprintf("model %s: %v", e.Version, err))
			continue
		}
		a.Close()
		if e.SHA256 == "" {
			find(e.File, fmt.Sprintf("model %s has no recorded checksum (written before checksums were kept)", e.Version))
		}
	}
	pending := make(map[string]bool, len(ix.Removing))
	for _, rm := range ix.Removing {
		pending[rm.File] = true
	}
	for _, a := range listed {
		switch {
		case named[a.Name]:
		case pending[a.Name]:
			find(a.Name, "artifact of a deleted version, not yet removed")
		default:
			find(a.Name, "artifact without an index entry")
		}
	}
	if ix.Active != "" && ix.Models[ix.Active] == nil {
		find("index", fmt.Sprintf("the active pointer names %q, which has no entry", ix.Active))
	}
	if ix.Shadow != "" && (ix.Models[ix.Shadow] == nil || ix.Shadow == ix.Active) {
		find("index", fmt.Sprintf("the shadow names %q, which has no entry or is the active model", ix.Shadow))
	}
	quarantined, err := artifacts.Quarantined(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: list the quarantine: %w", store.ErrRegistry, err)
	}
	for _, q := range quarantined {
		find(q, "in quarantine")
	}
	sort.SliceStable(rep.Findings, func(i, j int) bool { return rep.Findings[i].File < rep.Findings[j].File })
	return rep, nil
}
