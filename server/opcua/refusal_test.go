package opcua

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopcua/opcua"
	"github.com/gopcua/opcua/ua"

	"ramanserve/server/auth"
)

// refusedWith fails unless err carries code (as a status the client
// returned, or in its message when the client wrapped it).
func refusedWith(t *testing.T, what string, err error, code ua.StatusCode) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s was accepted, want %s", what, code)
	}
	if !errors.Is(err, code) && !strings.Contains(err.Error(), code.Error()) {
		t.Fatalf("%s: %v, want %s", what, err, code)
	}
}

func users(t *testing.T) *auth.Store {
	t.Helper()
	set, err := auth.Parse(strings.NewReader(auth.FileLine(auth.Read, "historian-secret", "historian")))
	if err != nil {
		t.Fatal(err)
	}
	return auth.NewStore(set)
}

// A client certificate not in the trusted folder is refused, and kept in
// the rejected folder for the operator.
func TestRefusesAnUntrustedCertificate(t *testing.T) {
	f := start(t, nil)
	f.client = newIdentity(t, "urn:ramanserve:stranger")
	// gopcua's client reports the refused channel as EOF; the status code
	// the gate sends is checked by TestGateRefusalCodes.
	if _, err := f.dial(t, "Basic256Sha256", ua.MessageSecurityModeSignAndEncrypt, "", ""); err == nil {
		t.Fatal("an untrusted certificate was accepted")
	}
	entries, _ := os.ReadDir(f.srv.opts.Trust.Rejected)
	if len(entries) != 1 || !strings.HasSuffix(entries[0].Name(), ".der") {
		t.Fatalf("rejected folder holds %v, want the refused certificate", entries)
	}
	b, _ := os.ReadFile(filepath.Join(f.srv.opts.Trust.Rejected, entries[0].Name()))
	if string(b) != string(f.client.der) {
		t.Fatal("the rejected folder's file is not the refused certificate")
	}
	// Moving it into the trusted folder admits it at once.
	if err := os.Rename(filepath.Join(f.srv.opts.Trust.Rejected, entries[0].Name()), filepath.Join(f.trusted, "stranger.der")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.dial(t, "Basic256Sha256", ua.MessageSecurityModeSignAndEncrypt, "", ""); err != nil {
		t.Fatalf("a certificate moved into the trusted folder: %v", err)
	}
}

// With users, a wrong password and an anonymous session are refused; the
// token's name and the token itself log in.
func TestRefusesWrongUsers(t *testing.T) {
	f := start(t, func(o *Options) { o.Users = users(t) })
	_, err := f.dial(t, "Basic256Sha256", ua.MessageSecurityModeSignAndEncrypt, "historian", "wrong")
	refusedWith(t, "a wrong password", err, ua.StatusBadUserAccessDenied)
	_, err = f.dial(t, "Basic256Sha256", ua.MessageSecurityModeSignAndEncrypt, "operator", "historian-secret")
	refusedWith(t, "another user's token", err, ua.StatusBadUserAccessDenied)
	_, err = f.dial(t, "Basic256Sha256", ua.MessageSecurityModeSignAndEncrypt, "", "")
	refusedWith(t, "an anonymous session with users", err, ua.StatusBadIdentityTokenRejected)
	if _, err := f.dial(t, "Aes128_Sha256_RsaOaep", ua.MessageSecurityModeSign, "historian", "historian-secret"); err != nil {
		t.Fatalf("the right password: %v", err)
	}
}

// Without -opcua-allow-insecure, SecurityPolicy None serves discovery
// only: GetEndpoints answers (clients need it), a session does not.
func TestRefusesNoneWithoutTheFlag(t *testing.T) {
	f := start(t, func(o *Options) { o.AllowInsecure = false })
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	eps, err := opcua.GetEndpoints(ctx, f.endpointURL())
	if err != nil {
		t.Fatalf("discovery over None: %v", err)
	}
	for _, ep := range eps {
		if ep.SecurityPolicyURI == ua.SecurityPolicyURINone {
			t.Fatalf("an endpoint of SecurityPolicy None is offered: %s", ep.EndpointURL)
		}
	}
	c, err := opcua.NewClient(f.endpointURL(), opcua.SecurityPolicy("None"), opcua.SecurityMode(ua.MessageSecurityModeNone),
		opcua.AuthAnonymous(), opcua.AutoReconnect(false), opcua.RequestTimeout(wait), opcua.DialTimeout(wait))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(ctx); err == nil {
		c.Close(ctx)
		t.Fatal("a session over None was accepted without -opcua-allow-insecure")
	}
}

// Nothing is writable, and a write says so per node.
func TestRefusesWrites(t *testing.T) {
	f := start(t, nil)
	c, err := f.dial(t, "None", ua.MessageSecurityModeNone, "", "")
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Write(context.Background(), &ua.WriteRequest{NodesToWrite: []*ua.WriteValue{{
		NodeID: f.nodeID("ramanserve/Analytes/EPA/Value"), AttributeID: ua.AttributeIDValue,
		Value: &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(1.5)},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != 1 || res.Results[0] != ua.StatusBadNotWritable {
		t.Fatalf("write results %v, want BadNotWritable", res.Results)
	}
	rr, err := c.Read(context.Background(), &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{{NodeID: f.nodeID("ramanserve/Analytes/EPA/Value"), AttributeID: ua.AttributeIDValue}}})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := rr.Results[0].Value.Value().(float64); v == 1.5 || rr.Results[0].Status != StatusNoValueYet {
		t.Fatal("the write changed the value")
	}
}

// The limits on sessions, subscriptions and monitored items.
func TestLimits(t *testing.T) {
	f := start(t, func(o *Options) {
		o.Limits = Limits{MaxSessions: 2, MaxSubscriptionsPerSession: 1, MaxItemsPerSession: 2}
	})
	c, err := f.dial(t, "None", ua.MessageSecurityModeNone, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.dial(t, "None", ua.MessageSecurityModeNone, "", ""); err != nil {
		t.Fatal(err)
	}
	_, err = f.dial(t, "None", ua.MessageSecurityModeNone, "", "")
	refusedWith(t, "a third session", err, ua.StatusBadTooManySessions)

	ctx := context.Background()
	sub, err := c.Subscribe(ctx, &opcua.SubscriptionParameters{Interval: 10 * time.Millisecond}, make(chan *opcua.PublishNotificationData, 16))
	if err != nil {
		t.Fatal(err)
	}
	if iv := sub.RevisedPublishingInterval; iv != 50*time.Millisecond {
		t.Errorf("a publishing interval of 10ms was revised to %v, want the floor 50ms", iv)
	}
	_, err = c.Subscribe(ctx, &opcua.SubscriptionParameters{Interval: time.Second}, make(chan *opcua.PublishNotificationData, 16))
	refusedWith(t, "a second subscription", err, ua.StatusBadTooManySubscriptions)
	items := func(n int) []*ua.MonitoredItemCreateRequest {
		var out []*ua.MonitoredItemCreateRequest
		for i := range n {
			out = append(out, opcua.NewMonitoredItemCreateRequestWithDefaults(f.nodeID("ramanserve/Analytes/EPA/Value"), ua.AttributeIDValue, uint32(i+1)))
		}
		return out
	}
	if _, err := sub.Monitor(ctx, ua.TimestampsToReturnBoth, items(2)...); err != nil {
		t.Fatal(err)
	}
	_, err = sub.Monitor(ctx, ua.TimestampsToReturnBoth, items(1)...)
	refusedWith(t, "a third monitored item", err, ua.StatusBadTooManyMonitoredItems)
	if st := f.srv.Stats(); st.Sessions != 2 || st.SessionsRefused != 1 {
		t.Fatalf("stats %+v, want 2 sessions and 1 refused", st)
	}
}

// A subscription whose client sends no publish requests (one that
// stopped acknowledging) is deleted after MaxSubscriptionLifetime, and
// the lifetime a client asks for is revised to fit in it.
func TestSubscriptionWithoutPublishRequestsIsCut(t *testing.T) {
	f := start(t, func(o *Options) { o.Limits = Limits{MaxSubscriptionLifetime: time.Second} })
	c, err := f.dial(t, "None", ua.MessageSecurityModeNone, "", "")
	if err != nil {
		t.Fatal(err)
	}
	var res *ua.CreateSubscriptionResponse
	// Sent by hand: the client's Subscribe would start sending publish
	// requests for it.
	err = c.Send(context.Background(), &ua.CreateSubscriptionRequest{
		RequestedPublishingInterval: 100, RequestedLifetimeCount: 1_000_000, RequestedMaxKeepAliveCount: 1000, PublishingEnabled: true,
	}, func(r ua.Response) error {
		res, _ = r.(*ua.CreateSubscriptionResponse)
		return nil
	})
	if err != nil || res == nil {
		t.Fatalf("create subscription: %v", err)
	}
	// The library ends a subscription after (keep-alive+1)*(lifetime+1)
	// intervals without a publish request.
	if k, l := res.RevisedMaxKeepAliveCount, res.RevisedLifetimeCount; (k+1)*(l+1) > 10 || 3*k > l {
		t.Fatalf("revised keep-alive %d and lifetime %d: want them to end it within 10 intervals of 100 ms, the lifetime at least 3 keep-alives", k, l)
	}
	alive := func() bool {
		svc := f.srv.lib.SubscriptionService
		svc.Mu.Lock()
		defer svc.Mu.Unlock()
		_, ok := svc.Subs[res.SubscriptionID]
		return ok
	}
	if !alive() {
		t.Fatal("the subscription is not there")
	}
	deadline := time.Now().Add(wait)
	for alive() {
		if time.Now().After(deadline) {
			t.Fatal("a subscription without publish requests outlived its bound")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestClampLifetime(t *testing.T) {
	for _, c := range []struct{ keep, life, budget uint32 }{
		{10, 1000, 600}, {1000, 1_000_000, 600}, {0, 0, 600}, {3, 3, 10}, {5, 1, 1200}, {1, 3, 6},
	} {
		k, l := clampLifetime(c.keep, c.life, c.budget)
		if k < 1 || l < 3*k {
			t.Errorf("clampLifetime(%v) = %d, %d: keep-alive under 1 or lifetime under 3 keep-alives", c, k, l)
		}
		if c.budget >= 8 && (k+1)*(l+1) > c.budget {
			t.Errorf("clampLifetime(%v) = %d, %d: lasts %d intervals", c, k, l, (k+1)*(l+1))
		}
		// With values waiting, the library ends a subscription after
		// life+1 intervals without a publish request: at least a quarter
		// of the budget, unless the client asked for less.
		if c.budget >= 16 && c.life+1 >= c.budget/4 && (l+1) < c.budget/4 {
			t.Errorf("clampLifetime(%v) = %d, %d: with values waiting it ends after %d intervals, under a quarter of %d", c, k, l, l+1, c.budget)
		}
	}
}
