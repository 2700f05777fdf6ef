package server

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"ramanserve/inference"
	"ramanserve/inference/registry"
)

// ChannelConfig configures the prediction channel and model reading.
type ChannelConfig struct {
	MaxMessageBytes  int64
	HandshakeTimeout time.Duration
	MaxConnections   int
}

// modelOpeners maps registry file extensions to readers.
func modelOpeners(cfg ChannelConfig) map[string]registry.OpenFunc {
	return map[string]registry.OpenFunc{
		".joblib": func(ctx context.Context, path string, e registry.Entry) (inference.Model, error) {
			return nil, fmt.Errorf("%w: scikit-learn .joblib files cannot be read by this build yet", inference.ErrModelCorrupted)
		},
		".npz": func(ctx context.Context, path string, e registry.Entry) (inference.Model, error) {
			return nil, fmt.Errorf("%w: .npz artifacts cannot be read by this build yet", inference.ErrModelCorrupted)
		},
	}
}

type channel struct{}

func startChannel(ctx context.Context, endpoint string, cfg ChannelConfig, reg *registry.Registry, version string, started time.Time, log *slog.Logger) (*channel, error) {
	return &channel{}, nil
}
func (c *channel) up() bool                            { return false }
func (c *channel) endpoint() string                    { return "" }
func (c *channel) shutdown(ctx context.Context) error  { return nil }
func (a *App) startTraining(ctx context.Context) error { return nil }
func (a *App) stopTraining(ctx context.Context) error  { return nil }
