// Package opcuatest connects to the OPC UA server as a plant's client
// does, with gopcua, for the tests of the server and of the program that
// starts it. It is test support: nothing of the server imports it.
package opcuatest

import (
	"context"
	"crypto/rsa"
	"fmt"
	"time"

	"github.com/gopcua/opcua"
	"github.com/gopcua/opcua/ua"
)

// Client is how a test's client presents itself.
type Client struct {
	// Policy is "None" or a security policy's name ("Basic256Sha256").
	Policy string
	Mode   ua.MessageSecurityMode
	// Key and DER are the client's key pair; nil presents none.
	Key *rsa.PrivateKey
	DER []byte
	// User signs in with Password; "" is anonymous.
	User, Password string
	// Timeout bounds the dial and each request.
	Timeout time.Duration
}

// Dial finds the endpoint at url that offers c's policy and mode, and
// connects to it without reconnecting on its own: a test sees every
// refusal as it comes.
func Dial(ctx context.Context, url string, c Client) (*opcua.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	eps, err := opcua.GetEndpoints(ctx, url)
	if err != nil {
		return nil, err
	}
	uri := ua.SecurityPolicyURINone
	if c.Policy != "None" {
		uri = ua.SecurityPolicyURIPrefix + c.Policy
	}
	ep, err := opcua.SelectEndpoint(eps, uri, c.Mode)
	if err != nil {
		return nil, err
	}
	opts := []opcua.Option{opcua.AutoReconnect(false), opcua.RequestTimeout(c.Timeout), opcua.DialTimeout(c.Timeout)}
	if c.Key != nil {
		opts = append(opts, opcua.PrivateKey(c.Key), opcua.Certificate(c.DER))
	}
	if c.User != "" {
		opts = append(opts, opcua.SecurityFromEndpoint(ep, ua.UserTokenTypeUserName), opcua.AuthUsername(c.User, c.Password))
	} else {
		opts = append(opts, opcua.SecurityFromEndpoint(ep, ua.UserTokenTypeAnonymous), opcua.AuthAnonymous())
	}
	client, err := opcua.NewClient(url, opts...)
	if err != nil {
		return nil, err
	}
	if err := client.Connect(ctx); err != nil {
		return nil, err
	}
	return client, nil
}

// NextDataChange returns the next data change notification of a
// subscription that publishes into notes, skipping keep-alives and
// other notifications; an error when a notification carries one or none
// comes within wait.
func NextDataChange(notes <-chan *opcua.PublishNotificationData, wait time.Duration) (*ua.DataChangeNotification, error) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case n := <-notes:
			if n.Error != nil {
				return nil, fmt.Errorf("notification: %w", n.Error)
			}
			if dc, ok := n.Value.(*ua.DataChangeNotification); ok && len(dc.MonitoredItems) > 0 {
				return dc, nil
			}
		case <-timer.C:
			return nil, fmt.Errorf("no data change within %v", wait)
		}
	}
}
