package opcua

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/server"
	"github.com/gopcua/opcua/ua"
	"github.com/gopcua/opcua/uapolicy"
	"github.com/gopcua/opcua/uasc"
)

// The library creates sessions (CreateSession) but activates any of them
// without looking at the user identity, and answers Read, Browse and the
// subscription services for any request, activated or not. This package
// registers its own handlers first (the library keeps the first handler
// registered for a service): ActivateSession checks the identity and the
// session limit, and every other service runs only for an activated
// session of this table.

// sessions are the activated sessions, by authentication token.
type sessions struct {
	limits  Limits
	mu      sync.Mutex
	byToken map[string]*sessionState
	refused atomic.Uint64
}

type sessionState struct {
	user     string
	nonce    []byte // the server nonce the next activation must answer
	lastSeen time.Time
}

func newSessions(l Limits) *sessions {
	return &sessions{limits: l, byToken: make(map[string]*sessionState)}
}

func (t *sessions) counts() (int, uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byToken), t.refused.Load()
}

// active reports whether the request's session is activated, and marks it
// seen.
func (t *sessions) active(hdr *ua.RequestHeader) bool {
	if hdr == nil || hdr.AuthenticationToken == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	st, ok := t.byToken[hdr.AuthenticationToken.String()]
	if ok {
		st.lastSeen = time.Now()
	}
	return ok
}

// sweep forgets sessions idle for longer than the limit.
func (t *sessions) sweep(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, st := range t.byToken {
		if now.Sub(st.lastSeen) > t.limits.SessionIdle {
			delete(t.byToken, k)
		}
	}
}

// libSession reads what the library keeps of a session that this package
// needs to check an activation: the nonce it sent the client and the
// client's certificate. The library does not export them; reflection
// reads them, and an activation is refused if it cannot (a library
// version that renamed them fails closed, and the tests say so).
func libSession(sess any) (nonce, cert []byte, ok bool) {
	v := reflect.ValueOf(sess)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return nil, nil, false
	}
	v = v.Elem()
	n, c := v.FieldByName("serverNonce"), v.FieldByName("remoteCertificate")
	if !n.IsValid() || !c.IsValid() || n.Kind() != reflect.Slice || c.Kind() != reflect.Slice {
		return nil, nil, false
	}
	return n.Bytes(), c.Bytes(), true
}

func respHeader(handle uint32, code ua.StatusCode) *ua.ResponseHeader {
	return &ua.ResponseHeader{
		Timestamp: time.Now(), RequestHandle: handle, ServiceResult: code,
		ServiceDiagnostics: &ua.DiagnosticInfo{}, StringTable: []string{}, AdditionalHeader: ua.NewExtensionObject(nil),
	}
}

func fault(r ua.Request, code ua.StatusCode) (ua.Response, error) {
	return &ua.ServiceFault{ResponseHeader: respHeader(r.Header().RequestHandle, code)}, nil
}

// registerHandlers puts this package's handlers in place; it runs before
// the library's Start registers its own.
func (s *Server) registerHandlers(lib *server.Server) {
	lib.RegisterHandler(id.ActivateSessionRequest_Encoding_DefaultBinary, s.activateSession(lib))
	lib.RegisterHandler(id.CloseSessionRequest_Encoding_DefaultBinary, s.closeSession)

	gated := func(h server.Handler) server.Handler {
		return func(sc *uasc.SecureChannel, r ua.Request, reqID uint32) (ua.Response, error) {
			if !s.sess.active(r.Header()) {
				return fault(r, ua.StatusBadSessionNotActivated)
			}
			return h(sc, r, reqID)
		}
	}
	lib.RegisterHandler(id.ReadRequest_Encoding_DefaultBinary, gated(s.read(lib)))
	lib.RegisterHandler(id.BrowseRequest_Encoding_DefaultBinary, gated(s.browse(lib)))
	lib.RegisterHandler(id.WriteRequest_Encoding_DefaultBinary, gated(refuseWrite))

	sub := func(call func(*server.SubscriptionService) server.Handler) server.Handler {
		return gated(func(sc *uasc.SecureChannel, r ua.Request, reqID uint32) (ua.Response, error) {
			return call(lib.SubscriptionService)(sc, r, reqID)
		})
	}
	lib.RegisterHandler(id.CreateSubscriptionRequest_Encoding_DefaultBinary, gated(s.createSubscription(lib)))
	lib.RegisterHandler(id.PublishRequest_Encoding_DefaultBinary, sub(func(x *server.SubscriptionService) server.Handler { return x.Publish }))
	lib.RegisterHandler(id.DeleteSubscriptionsRequest_Encoding_DefaultBinary, sub(func(x *server.SubscriptionService) server.Handler { return x.DeleteSubscriptions }))
	lib.RegisterHandler(id.CreateMonitoredItemsRequest_Encoding_DefaultBinary, gated(s.createMonitoredItems(lib)))
	lib.RegisterHandler(id.DeleteMonitoredItemsRequest_Encoding_DefaultBinary, gated(s.deleteMonitoredItems(lib)))

	// Everything that would change the server, and the services whose
	// library handlers do not check their input: refused outright.
	for _, t := range []uint16{
		id.CallRequest_Encoding_DefaultBinary,
		id.AddNodesRequest_Encoding_DefaultBinary, id.AddReferencesRequest_Encoding_DefaultBinary,
		id.DeleteNodesRequest_Encoding_DefaultBinary, id.DeleteReferencesRequest_Encoding_DefaultBinary,
		id.HistoryUpdateRequest_Encoding_DefaultBinary, id.HistoryReadRequest_Encoding_DefaultBinary,
		id.RegisterServerRequest_Encoding_DefaultBinary, id.RegisterServer2Request_Encoding_DefaultBinary,
		id.SetMonitoringModeRequest_Encoding_DefaultBinary, id.SetTriggeringRequest_Encoding_DefaultBinary,
		id.ModifySubscriptionRequest_Encoding_DefaultBinary, id.ModifyMonitoredItemsRequest_Encoding_DefaultBinary,
		id.SetPublishingModeRequest_Encoding_DefaultBinary, id.RepublishRequest_Encoding_DefaultBinary,
		id.TransferSubscriptionsRequest_Encoding_DefaultBinary,
		id.QueryFirstRequest_Encoding_DefaultBinary, id.QueryNextRequest_Encoding_DefaultBinary,
		id.BrowseNextRequest_Encoding_DefaultBinary, id.TranslateBrowsePathsToNodeIDsRequest_Encoding_DefaultBinary,
		id.RegisterNodesRequest_Encoding_DefaultBinary, id.UnregisterNodesRequest_Encoding_DefaultBinary,
		id.CancelRequest_Encoding_DefaultBinary,
	} {
		lib.RegisterHandler(t, func(_ *uasc.SecureChannel, r ua.Request, _ uint32) (ua.Response, error) {
			return fault(r, ua.StatusBadServiceUnsupported)
		})
	}
}

// activateSession checks the client's signature and user identity, and
// the session limit.
func (s *Server) activateSession(lib *server.Server) server.Handler {
	return func(sc *uasc.SecureChannel, r ua.Request, _ uint32) (ua.Response, error) {
		req, ok := r.(*ua.ActivateSessionRequest)
		if !ok || req.RequestHeader == nil || req.RequestHeader.AuthenticationToken == nil {
			return nil, ua.StatusBadRequestTypeInvalid
		}
		hdr := req.RequestHeader
		sess := lib.Session(hdr)
		if sess == nil {
			return fault(r, ua.StatusBadSessionIDInvalid)
		}
		libNonce, cert, ok := libSession(sess)
		if !ok {
			s.log.Error("opc ua: cannot read the library's session; refusing activations")
			return fault(r, ua.StatusBadInternalError)
		}
		key := hdr.AuthenticationToken.String()
		s.sess.mu.Lock()
		st, again := s.sess.byToken[key]
		nonce := libNonce
		if again {
			nonce = st.nonce
		}
		full := !again && len(s.sess.byToken) >= s.opts.Limits.MaxSessions
		s.sess.mu.Unlock()
		if full {
			s.sess.refused.Add(1)
			s.log.Warn("opc ua: refused a session: the limit is reached", "max", s.opts.Limits.MaxSessions)
			return fault(r, ua.StatusBadTooManySessions)
		}
		var sig []byte
		if req.ClientSignature != nil {
			sig = req.ClientSignature.Signature
		}
		if err := sc.VerifySessionSignature(cert, nonce, sig); err != nil {
			return fault(r, ua.StatusBadApplicationSignatureInvalid)
		}
		user, code := s.identify(lib, req.UserIdentityToken, nonce)
		if code != ua.StatusOK {
			s.log.Warn("opc ua: refused a session's user identity", "status", code.Error(), "user", user)
			return fault(r, code)
		}
		next := make([]byte, 32)
		if _, err := rand.Read(next); err != nil {
			return fault(r, ua.StatusBadInternalError)
		}
		s.sess.mu.Lock()
		if !again && len(s.sess.byToken) >= s.opts.Limits.MaxSessions {
			s.sess.mu.Unlock()
			s.sess.refused.Add(1)
			return fault(r, ua.StatusBadTooManySessions)
		}
		s.sess.byToken[key] = &sessionState{user: user, nonce: next, lastSeen: time.Now()}
		s.sess.mu.Unlock()
		return &ua.ActivateSessionResponse{
			ResponseHeader:  respHeader(hdr.RequestHandle, ua.StatusOK),
			ServerNonce:     next,
			Results:         []ua.StatusCode{},
			DiagnosticInfos: []*ua.DiagnosticInfo{},
		}, nil
	}
}

// identify checks a user identity token: anonymous only without users,
// otherwise a user name whose password (encrypted with the server's key
// and suffixed with nonce, Part 4, 7.41.2.3) logs in.
func (s *Server) identify(lib *server.Server, tok *ua.ExtensionObject, nonce []byte) (string, ua.StatusCode) {
	var v any
	if tok != nil {
		v = tok.Value
	}
	switch t := v.(type) {
	case nil, *ua.AnonymousIdentityToken:
		if s.opts.Users != nil {
			return "", ua.StatusBadIdentityTokenRejected
		}
		return "", ua.StatusOK
	case *ua.UserNameIdentityToken:
		if s.opts.Users == nil {
			return t.UserName, ua.StatusBadIdentityTokenRejected
		}
		policy := ""
		for _, ep := range lib.Endpoints() {
			for _, p := range ep.UserIdentityTokens {
				if p.PolicyID == t.PolicyID && p.TokenType == ua.UserTokenTypeUserName {
					policy = p.SecurityPolicyURI
				}
			}
		}
		if policy == "" || policy == ua.SecurityPolicyURINone {
			return t.UserName, ua.StatusBadIdentityTokenInvalid
		}
		password, ok := s.decryptPassword(policy, t.Password, nonce)
		if !ok {
			return t.UserName, ua.StatusBadIdentityTokenInvalid
		}
		if _, err := s.opts.Users.Login(t.UserName, password); err != nil {
			return t.UserName, ua.StatusBadUserAccessDenied
		}
		return t.UserName, ua.StatusOK
	}
	return "", ua.StatusBadIdentityTokenRejected
}

func (s *Server) decryptPassword(policy string, secret, nonce []byte) (string, bool) {
	enc, err := uapolicy.Asymmetric(policy, s.opts.Key, nil)
	if err != nil || len(secret) > 4096 {
		return "", false
	}
	plain, err := enc.Decrypt(secret)
	if err != nil || len(plain) < 4 {
		return "", false
	}
	n := int(binary.LittleEndian.Uint32(plain))
	body := plain[4:]
	if n > len(body) || n < len(nonce) {
		return "", false
	}
	body = body[:n]
	pw, got := body[:n-len(nonce)], body[n-len(nonce):]
	if subtle.ConstantTimeCompare(got, nonce) != 1 {
		return "", false
	}
	return string(pw), true
}

// closeSession forgets the session here; the library keeps its record
// (it offers no way to drop it), which no request can use any more.
func (s *Server) closeSession(_ *uasc.SecureChannel, r ua.Request, _ uint32) (ua.Response, error) {
	hdr := r.Header()
	if hdr != nil && hdr.AuthenticationToken != nil {
		s.sess.mu.Lock()
		delete(s.sess.byToken, hdr.AuthenticationToken.String())
		s.sess.mu.Unlock()
	}
	return &ua.CloseSessionResponse{ResponseHeader: respHeader(hdr.RequestHandle, ua.StatusOK)}, nil
}

func (s *Server) read(lib *server.Server) server.Handler {
	return func(_ *uasc.SecureChannel, r ua.Request, _ uint32) (ua.Response, error) {
		req, ok := r.(*ua.ReadRequest)
		if !ok {
			return nil, ua.StatusBadRequestTypeInvalid
		}
		if len(req.NodesToRead) > s.opts.Limits.MaxNodesPerRequest {
			return fault(r, ua.StatusBadTooManyOperations)
		}
		results := make([]*ua.DataValue, len(req.NodesToRead))
		for i, n := range req.NodesToRead {
			results[i] = attrStatus(ua.StatusBadNodeIDUnknown)
			if n == nil || n.NodeID == nil {
				continue
			}
			ns, err := lib.Namespace(int(n.NodeID.Namespace()))
			if err != nil {
				continue
			}
			if v := ns.Attribute(n.NodeID, n.AttributeID); v != nil {
				results[i] = v
			}
		}
		return &ua.ReadResponse{ResponseHeader: respHeader(req.RequestHeader.RequestHandle, ua.StatusOK), Results: results, DiagnosticInfos: []*ua.DiagnosticInfo{}}, nil
	}
}

func (s *Server) browse(lib *server.Server) server.Handler {
	return func(_ *uasc.SecureChannel, r ua.Request, _ uint32) (ua.Response, error) {
		req, ok := r.(*ua.BrowseRequest)
		if !ok {
			return nil, ua.StatusBadRequestTypeInvalid
		}
		if len(req.NodesToBrowse) > s.opts.Limits.MaxNodesPerRequest {
			return fault(r, ua.StatusBadTooManyOperations)
		}
		results := make([]*ua.BrowseResult, len(req.NodesToBrowse))
		for i, bd := range req.NodesToBrowse {
			results[i] = &ua.BrowseResult{StatusCode: ua.StatusBadNodeIDUnknown}
			if bd == nil || bd.NodeID == nil {
				continue
			}
			ns, err := lib.Namespace(int(bd.NodeID.Namespace()))
			if err != nil {
				continue
			}
			if res := ns.Browse(bd); res != nil {
				results[i] = res
			}
		}
		return &ua.BrowseResponse{ResponseHeader: respHeader(req.RequestHeader.RequestHandle, ua.StatusOK), Results: results, DiagnosticInfos: []*ua.DiagnosticInfo{}}, nil
	}
}

// refuseWrite answers every write: nothing here is writable.
func refuseWrite(_ *uasc.SecureChannel, r ua.Request, _ uint32) (ua.Response, error) {
	req, ok := r.(*ua.WriteRequest)
	if !ok {
		return nil, ua.StatusBadRequestTypeInvalid
	}
	results := make([]ua.StatusCode, len(req.NodesToWrite))
	for i := range results {
		results[i] = ua.StatusBadNotWritable
	}
	return &ua.WriteResponse{ResponseHeader: respHeader(req.RequestHeader.RequestHandle, ua.StatusOK), Results: results, DiagnosticInfos: []*ua.DiagnosticInfo{}}, nil
}

// owned counts the subscriptions of the request's session and reports
// whether subID (0: none) is one of them.
func owned(lib *server.Server, hdr *ua.RequestHeader, subID uint32) (count int, mine bool) {
	key := hdr.AuthenticationToken.String()
	svc := lib.SubscriptionService
	svc.Mu.Lock()
	defer svc.Mu.Unlock()
	for sid, sub := range svc.Subs {
		if sub.Session != nil && sub.Session.AuthTokenID.String() == key {
			count++
			mine = mine || sid == subID
		}
	}
	return count, mine
}

// createSubscription bounds the subscriptions of a session and clamps the
// publishing interval, keep-alive and lifetime a client asks for.
func (s *Server) createSubscription(lib *server.Server) server.Handler {
	return func(sc *uasc.SecureChannel, r ua.Request, reqID uint32) (ua.Response, error) {
		req, ok := r.(*ua.CreateSubscriptionRequest)
		if !ok {
			return nil, ua.StatusBadRequestTypeInvalid
		}
		if n, _ := owned(lib, req.RequestHeader, 0); n >= s.opts.Limits.MaxSubscriptionsPerSession {
			return fault(r, ua.StatusBadTooManySubscriptions)
		}
		lib.SubscriptionService.Mu.Lock()
		// The library numbers a new subscription len(subscriptions)+1; if
		// that number is taken (one was deleted before it), it would
		// replace a live subscription: refuse instead.
		_, taken := lib.SubscriptionService.Subs[uint32(len(lib.SubscriptionService.Subs))+1]
		lib.SubscriptionService.Mu.Unlock()
		if taken {
			return fault(r, ua.StatusBadTooManySubscriptions)
		}
		l := s.opts.Limits
		ms := func(d time.Duration) float64 { return float64(d / time.Millisecond) }
		iv := req.RequestedPublishingInterval
		if !(iv >= ms(l.MinPublishingInterval)) { // NaN too
			iv = ms(l.MinPublishingInterval)
		}
		iv = min(iv, ms(l.MaxPublishingInterval))
		req.RequestedPublishingInterval = iv
		req.RequestedMaxKeepAliveCount, req.RequestedLifetimeCount = clampLifetime(
			req.RequestedMaxKeepAliveCount, req.RequestedLifetimeCount, uint32(ms(l.MaxSubscriptionLifetime)/iv))
		return lib.SubscriptionService.CreateSubscription(sc, req, reqID)
	}
}

// createMonitoredItems bounds the monitored items of a session and checks
// that the subscription is the session's own.
func (s *Server) createMonitoredItems(lib *server.Server) server.Handler {
	return func(sc *uasc.SecureChannel, r ua.Request, reqID uint32) (ua.Response, error) {
		req, ok := r.(*ua.CreateMonitoredItemsRequest)
		if !ok {
			return nil, ua.StatusBadRequestTypeInvalid
		}
		if _, mine := owned(lib, req.RequestHeader, req.SubscriptionID); !mine {
			return fault(r, ua.StatusBadSubscriptionIDInvalid)
		}
		for _, it := range req.ItemsToCreate {
			if it == nil || it.ItemToMonitor == nil || it.ItemToMonitor.NodeID == nil || it.RequestedParameters == nil {
				return fault(r, ua.StatusBadMonitoredItemIDInvalid)
			}
		}
		key := req.RequestHeader.AuthenticationToken.String()
		mis := lib.MonitoredItemService
		mis.Mu.Lock()
		n := 0
		for _, it := range mis.Items {
			if it.Sub != nil && it.Sub.Session != nil && it.Sub.Session.AuthTokenID.String() == key {
				n++
			}
		}
		mis.Mu.Unlock()
		if n+len(req.ItemsToCreate) > s.opts.Limits.MaxItemsPerSession {
			return fault(r, ua.StatusBadTooManyMonitoredItems)
		}
		return mis.CreateMonitoredItems(sc, req, reqID)
	}
}

// deleteMonitoredItems deletes the session's own items; the library's
// handler does not check whose they are.
func (s *Server) deleteMonitoredItems(lib *server.Server) server.Handler {
	return func(_ *uasc.SecureChannel, r ua.Request, _ uint32) (ua.Response, error) {
		req, ok := r.(*ua.DeleteMonitoredItemsRequest)
		if !ok {
			return nil, ua.StatusBadRequestTypeInvalid
		}
		if len(req.MonitoredItemIDs) > s.opts.Limits.MaxNodesPerRequest {
			return fault(r, ua.StatusBadTooManyOperations)
		}
		key := req.RequestHeader.AuthenticationToken.String()
		mis := lib.MonitoredItemService
		results := make([]ua.StatusCode, len(req.MonitoredItemIDs))
		for i, itemID := range req.MonitoredItemIDs {
			mis.Mu.Lock()
			it, ok := mis.Items[itemID]
			mine := ok && it.Sub != nil && it.Sub.ID == req.SubscriptionID && it.Sub.Session != nil && it.Sub.Session.AuthTokenID.String() == key
			mis.Mu.Unlock()
			if !mine {
				results[i] = ua.StatusBadMonitoredItemIDInvalid
				continue
			}
			mis.DeleteMonitoredItem(itemID)
			results[i] = ua.StatusOK
		}
		return &ua.DeleteMonitoredItemsResponse{ResponseHeader: respHeader(req.RequestHeader.RequestHandle, ua.StatusOK), Results: results, DiagnosticInfos: []*ua.DiagnosticInfo{}}, nil
	}
}

// maxKeepAlive is the most publishing intervals a revised keep-alive
// spans (clampLifetime).
const maxKeepAlive = 3

// clampLifetime revises a subscription's keep-alive and lifetime counts so
// that it ends within budget publishing intervals without a publish
// request. The library counts the lifetime two ways: while it has nothing
// to send, in keep-alive periods (the subscription lasts
// (keep+1)*(life+1) intervals without a publish request); while values
// wait to be sent, in intervals (life+1). The keep-alive is therefore at
// most maxKeepAlive intervals, so that a subscriber with values waiting
// keeps its subscription through a pause of a quarter of the budget (a
// historian's hiccup), not of a fourteenth. The lifetime stays at least
// three keep-alives (Part 4, 5.13.2), which may overrun a budget under 8
// intervals.
func clampLifetime(keep, life, budget uint32) (uint32, uint32) {
	maxKeep := uint32(1)
	for k := uint32(2); k <= maxKeepAlive && (k+1)*(3*k+1) <= budget; k++ {
		maxKeep = k
	}
	keep = max(1, min(keep, maxKeep))
	maxLife := max(budget/(keep+1), 1) - 1
	life = max(3*keep, min(life, maxLife))
	return keep, life
}
