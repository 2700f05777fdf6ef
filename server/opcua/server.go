// Package opcua is the OPC UA transport: the server that publishes every
// prediction as OPC UA variables (docs/opcua.md), beside the prediction
// channel. It reads the live feed (package live) on its own goroutine, so
// publishing never slows a reply.
//
// The protocol stack is github.com/gopcua/opcua's server. This package
// owns what that library leaves open: the port itself (a gate that bounds
// connections and checks each secure channel's policy and client
// certificate before the library sees it, gate.go), the user identity of
// sessions and which services an activated session may call
// (session.go), the limits on sessions, subscriptions and monitored
// items, and the address space (space.go, values.go).
package opcua

import (
	"context"
	"crypto/rsa"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/server"
	"github.com/gopcua/opcua/ua"

	"ramanserve/server/auth"
	"ramanserve/service/live"
)

// Users checks the user name and password of a session (the tokens file:
// a token is a password, its name the user name).
type Users interface {
	Login(name, password string) (auth.Identity, error)
}

// Status is what the Server folder shows.
type Status struct {
	Active, Shadow string
	Ready          bool
}

// Limits bound what clients can make the server hold. Zero fields take
// the defaults (docs/opcua.md).
type Limits struct {
	MaxSessions                int // activated sessions, all clients together (32)
	MaxSubscriptionsPerSession int // (4)
	MaxItemsPerSession         int // monitored items (512)
	MaxNodesPerRequest         int // nodes of one Read or Browse (1000)
	// MinPublishingInterval and MaxPublishingInterval clamp what a
	// subscription asks (50 ms, 10 s).
	MinPublishingInterval, MaxPublishingInterval time.Duration
	// MaxSubscriptionLifetime bounds how long a subscription lives without
	// a publish request from its client (60 s): a client that stops
	// acknowledging publishes loses its subscriptions after it.
	MaxSubscriptionLifetime time.Duration
	// SessionIdle drops an activated session that made no request for it
	// (10 min).
	SessionIdle time.Duration
}

func (l *Limits) fill() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxSessions, 32)
	def(&l.MaxSubscriptionsPerSession, 4)
	def(&l.MaxItemsPerSession, 512)
	def(&l.MaxNodesPerRequest, 1000)
	dur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	dur(&l.MinPublishingInterval, 50*time.Millisecond)
	dur(&l.MaxPublishingInterval, 10*time.Second)
	dur(&l.MaxSubscriptionLifetime, time.Minute)
	dur(&l.SessionIdle, 10*time.Minute)
}

// Options configure a Server.
type Options struct {
	// Addr is opc.tcp://HOST:PORT. HOST is advertised in the endpoints;
	// an empty or unspecified host listens everywhere and advertises the
	// machine's name and localhost.
	Addr string
	// AllowInsecure adds the endpoint of SecurityPolicy None.
	AllowInsecure bool
	// Certificate (DER) and Key: the server's application instance
	// certificate, needed by every policy but None.
	Certificate []byte
	Key         *rsa.PrivateKey
	// Trust decides client certificates; nil refuses every one.
	Trust *TrustList
	// Users: nil admits anonymous sessions only; otherwise only users.
	Users          Users
	Feed           *live.Feed
	Status         func() Status // polled every second; nil: the Server folder stays empty
	UncertainBelow float64
	Limits         Limits
	Gate           GateLimits
	ServerVersion  string
	Logger         *slog.Logger
}

// Server is the OPC UA server.
type Server struct {
	opts   Options
	log    *slog.Logger
	lib    *server.Server
	gate   *gate
	space  *space
	layout *layout
	rules  valueRules
	sess   *sessions
	addr   string // the public endpoint URL

	stopLibrary func()
	cancel      context.CancelFunc
	done        chan struct{}
	once        sync.Once
}

// Policies the server offers besides None.
var securePolicies = []string{ua.SecurityPolicyURIBasic256Sha256, ua.SecurityPolicyURIAes128Sha256RsaOaep}

// ErrConfig is a configuration the server cannot serve.
var ErrConfig = errors.New("opc ua configuration")

// Start binds Addr and serves until Close.
func Start(opts Options) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	opts.Limits.fill()
	if opts.Feed == nil {
		return nil, fmt.Errorf("%w: no live feed", ErrConfig)
	}
	secure := opts.Certificate != nil && opts.Key != nil
	if !secure && !opts.AllowInsecure {
		return nil, fmt.Errorf("%w: without a certificate and key (-opcua-cert, -opcua-key; ramanserve keygen -opcua makes them) only SecurityPolicy None could be offered, and it needs -opcua-allow-insecure", ErrConfig)
	}
	if opts.Users != nil && !secure {
		return nil, fmt.Errorf("%w: user names and passwords need a certificate to be encrypted with (-opcua-cert, -opcua-key)", ErrConfig)
	}
	u, err := url.Parse(opts.Addr)
	if err != nil || u.Scheme != "opc.tcp" || u.Port() == "" {
		return nil, fmt.Errorf("%w: -opcua-addr %q is not opc.tcp://HOST:PORT", ErrConfig, opts.Addr)
	}
	ln, err := net.Listen("tcp", u.Host)
	if err != nil {
		return nil, fmt.Errorf("opc ua: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	hosts := []string{u.Hostname()}
	if ip := net.ParseIP(u.Hostname()); u.Hostname() == "" || ip != nil && ip.IsUnspecified() {
		hosts = []string{"localhost"}
		if h, err := os.Hostname(); err == nil && h != "localhost" {
			hosts = append(hosts, h)
		}
	}
	s := &Server{opts: opts, log: opts.Logger, rules: valueRules{UncertainBelow: opts.UncertainBelow},
		addr: "opc.tcp://" + net.JoinHostPort(hosts[0], strconv.Itoa(port)), done: make(chan struct{})}
	s.sess = newSessions(opts.Limits)
	upstream, err := s.startLibrary(hosts, port)
	if err != nil {
		ln.Close()
		return nil, err
	}
	s.gate = newGate(ln, upstream, opts.Gate, s.checkOpen, s.log)
	go s.gate.serve()
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go s.publish(ctx)
	s.log.Info("opc ua server listening", "addr", s.addr, "insecure", opts.AllowInsecure, "secure", secure, "users", opts.Users != nil)
	return s, nil
}

// startLibrary starts the library's server on a loopback port, the
// gate's upstream, with the public endpoints advertised.
func (s *Server) startLibrary(hosts []string, port int) (string, error) {
	var lastErr error
	for range 5 { // the loopback port is chosen free, then bound: retry if taken meanwhile
		probe, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", fmt.Errorf("opc ua: %w", err)
		}
		inner := probe.Addr().(*net.TCPAddr).Port
		probe.Close()
		lib, sp, l := s.newLibrary(hosts, port, inner)
		ctx, cancel := context.WithCancel(context.Background())
		if err := lib.Start(ctx); err != nil {
			cancel()
			lastErr = err
			continue
		}
		s.lib, s.space, s.layout = lib, sp, l
		stopLib := cancel
		s.stopLibrary = func() { stopLib(); lib.Close() }
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(inner)), nil
	}
	return "", fmt.Errorf("opc ua: starting the server: %w", lastErr)
}

func (s *Server) newLibrary(hosts []string, port, inner int) (*server.Server, *space, *layout) {
	opts := []server.Option{
		// The first endpoint is where the library listens: loopback, behind
		// the gate. Clients only ever see the public ones (GetEndpoints
		// answers for the URL a client asked with).
		server.EndPoint("127.0.0.1", inner),
		server.ServerName("ramanserve"),
		server.ManufacturerName("ramanserve"),
		server.ProductName("ramanserve OPC UA server"),
		server.SoftwareVersion(s.opts.ServerVersion),
		server.SetLogger(libLogger{s.log}),
	}
	for _, h := range hosts {
		opts = append(opts, server.EndPoint(h, port))
	}
	if s.opts.AllowInsecure {
		opts = append(opts, server.EnableSecurity("None", ua.MessageSecurityModeNone))
	}
	if s.opts.Certificate != nil && s.opts.Key != nil {
		for _, p := range securePolicies {
			opts = append(opts,
				server.EnableSecurity(p, ua.MessageSecurityModeSign),
				server.EnableSecurity(p, ua.MessageSecurityModeSignAndEncrypt))
		}
		opts = append(opts, server.Certificate(s.opts.Certificate), server.PrivateKey(s.opts.Key))
	}
	if s.opts.Users == nil {
		opts = append(opts, server.EnableAuthMode(ua.UserTokenTypeAnonymous))
	} else {
		opts = append(opts, server.EnableAuthMode(ua.UserTokenTypeUserName))
	}
	lib := server.New(opts...)
	s.registerHandlers(lib)
	sp := newSpace()
	l := build(sp)
	sp.finish(uint16(lib.AddNamespace(sp)))
	if ns0, err := lib.Namespace(0); err == nil {
		ns0.Objects().AddRef(sp.root.lib, id.Organizes, true)
	}
	return lib, sp, l
}

// URL is the public endpoint URL.
func (s *Server) URL() string { return s.addr }

// Addr is the bound address of the OPC UA port.
func (s *Server) Addr() net.Addr { return s.gate.ln.Addr() }

// Stats are the server's counters.
type Stats struct {
	Gate            GateStats
	Feed            live.Stats
	Sessions        int
	SessionsRefused uint64
}

// Stats returns the counters.
func (s *Server) Stats() Stats {
	n, refused := s.sess.counts()
	return Stats{Gate: s.gate.stats(), Feed: s.opts.Feed.Stats(), Sessions: n, SessionsRefused: refused}
}

// Close stops the server: the port first, then the library and the
// publisher.
func (s *Server) Close() error {
	s.once.Do(func() {
		s.gate.close()
		// gopcua registers each accepted connection on a goroutine of its
		// own, which adds to the WaitGroup that the library's Close waits
		// on, unsynchronised (the race detector reports it). Only the
		// gate dials the library, and the gate is closed: once
		// registerSettle has passed since its last dial, every such
		// registration has begun.
		if wait := registerSettle - time.Since(time.Unix(0, s.gate.lastDial.Load())); wait > 0 {
			time.Sleep(wait)
		}
		s.stopLibrary()
		s.cancel()
		<-s.done
	})
	return nil
}

// registerSettle is how long Close lets the library register a
// connection the gate dialled before it closes the library.
const registerSettle = 200 * time.Millisecond

// PublishGap is the shortest time between two rounds of publishing: the
// smallest publishing interval a subscription gets (50 ms) sees every
// round.
const PublishGap = 20 * time.Millisecond

// publish moves the feed's outcomes into the address space and tells the
// library which variables changed; once a second it refreshes the Server
// folder and forgets idle sessions.
func (s *Server) publish(ctx context.Context) {
	defer close(s.done)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var slots []live.Slot
	var changed []*node
	var lastRound time.Time
	last := Status{}
	s.refreshStatus(&last, true, &changed)
	s.notify(changed)
	changed = changed[:0]
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.opts.Feed.Ready():
			// At most one round per PublishGap, however fast predicts come:
			// what arrives meanwhile is coalesced in the feed (the latest
			// wins, counted), and the cost of publishing stays bounded.
			if wait := time.Until(lastRound.Add(PublishGap)); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					return
				}
			}
			lastRound = time.Now()
			slots = s.opts.Feed.Take(slots[:0])
			s.space.mu.Lock()
			for i := range slots {
				src := s.layout.source(s.space, slots[i].Source)
				changed = s.rules.apply(src, &slots[i].Outcome, changed)
			}
			s.space.mu.Unlock()
		case <-tick.C:
			s.refreshStatus(&last, false, &changed)
			s.sess.sweep(time.Now())
		}
		s.notify(changed)
		changed = changed[:0]
	}
}

func (s *Server) notify(changed []*node) {
	for _, n := range changed {
		s.lib.ChangeNotification(s.space.nodeID(n.path))
	}
}

func (s *Server) refreshStatus(last *Status, first bool, changed *[]*node) {
	if s.opts.Status == nil {
		return
	}
	st := s.opts.Status()
	s.space.mu.Lock()
	defer s.space.mu.Unlock()
	if first || st.Active != last.Active {
		s.layout.active.set(goodNow(st.Active))
		*changed = append(*changed, s.layout.active)
	}
	if first || st.Shadow != last.Shadow {
		s.layout.shadow.set(goodNow(st.Shadow))
		*changed = append(*changed, s.layout.shadow)
	}
	if first || st.Ready != last.Ready {
		s.layout.ready.set(goodNow(st.Ready))
		*changed = append(*changed, s.layout.ready)
	}
	*last = st
}

// libLogger puts the library's messages at debug level: it logs every
// connection and its start-up at info and error, and this package logs
// what an operator needs (refusals, limits) itself.
type libLogger struct{ log *slog.Logger }

func (l libLogger) Debug(msg string, args ...any) { l.put(msg, args) }
func (l libLogger) Info(msg string, args ...any)  { l.put(msg, args) }
func (l libLogger) Warn(msg string, args ...any)  { l.put(msg, args) }
func (l libLogger) Error(msg string, args ...any) { l.put(msg, args) }
func (l libLogger) put(msg string, args []any) {
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		l.log.Debug("opc ua library: " + fmt.Sprintf(msg, args...))
	}
}
