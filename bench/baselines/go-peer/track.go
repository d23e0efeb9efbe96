package main

// POST /v1/asset/track, independent of the HTTP library: the gateway's
// TelemetryService.track (src/telemetry/service.ts, record.ts) step by step,
// with its answers byte for byte where the gateway's are fixed text.

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"regexp"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

const trackPath = "/v1/asset/track"
const trackScope = "asset:track:write"
const schemaHeader = "asset-tracking-data@1"

var successBody = []byte(`{"status":"success","message":"message sent successfully"}`)
var invalidJSONBody = []byte(`{"status":"validation_error","message":"request body is not valid JSON","errors":{"body":"must be valid JSON"}}`)

// Request is what the handler needs from an HTTP request.
type Request struct {
	Method, Path     string
	Authorization    string
	HasAuthorization bool
	ContentType      string
	RequestID        string
	RequestTimestamp string
	Body             []byte
}

// Reply is the answer; Headers are name, value pairs beside x-request-id and content-type.
type Reply struct {
	Status    int
	Body      []byte
	Headers   []string
	RequestID string
}

type Service struct {
	verifier   *Verifier
	validator  RecordValidator
	requestID  *regexp.Regexp
	kafka      *kgo.Client
	topic      string
	timeout    time.Duration
	maxPending int64
	maxBody    int
	pending    atomic.Int64
	log        *AccessLog
	statuses   [600]atomic.Int64
}

// RequestIDFor is the id the answer carries: the client's when valid, else a new UUID.
func (s *Service) RequestIDFor(given string) string {
	if given != "" && s.requestID.MatchString(given) {
		return given
	}
	return newUUID()
}

func (s *Service) Track(r *Request, started time.Time) Reply {
	var reply Reply
	if r.Path == batchPath {
		reply = s.trackBatch(r)
	} else {
		reply = s.track(r)
	}
	s.finish(r, &reply, started)
	return reply
}

func (s *Service) finish(r *Request, reply *Reply, started time.Time) {
	if reply.Status > 0 && reply.Status < len(s.statuses) {
		s.statuses[reply.Status].Add(1)
	}
	s.log.Request(reply.RequestID, r.Method, r.Path, reply.Status, time.Since(started))
}

// authorize verifies the bearer token for the track scope; a refusal is the
// reply as the gateway gives it (401 with WWW-Authenticate, or 403).
func (s *Service) authorize(r *Request, id string) (*Claims, *Reply) {
	claims, aerr := s.verifier.Verify(r.Authorization, r.HasAuthorization, trackScope)
	if aerr == nil {
		return claims, nil
	}
	rep := Reply{Status: aerr.status, RequestID: id, Body: errorBody("error", aerr.message, nil)}
	if aerr.status == 401 {
		rep.Headers = []string{"www-authenticate", "Bearer"}
	}
	return nil, &rep
}

func (s *Service) track(r *Request) Reply {
	id := s.RequestIDFor(r.RequestID)
	claims, refused := s.authorize(r, id)
	if refused != nil {
		return *refused
	}
	raw := wellFormed(r.Body)
	var record any
	if len(raw) > 0 {
		var err error
		if record, err = decodeJSON(raw); err != nil {
			return Reply{Status: 400, RequestID: id, Body: invalidJSONBody}
		}
	}
	problems := append(headerErrors(r, s.requestID), s.validator.Validate(record)...)
	if len(problems) > 0 {
		return Reply{Status: 400, RequestID: id, Body: validationBody(problems)}
	}
	obj := record.(map[string]any)
	value, err := messageValue(obj, raw, claims.ClientID, id, time.Now())
	if err != nil {
		return Reply{Status: 500, RequestID: id, Body: errorBody("error", "Internal error", []string{"detail", err.Error()})}
	}
	if n := s.pending.Load(); n >= s.maxPending {
		return Reply{Status: 503, RequestID: id, Headers: []string{"retry-after", "1"},
			Body: errorBody("error", "Too many records pending; retry later", []string{"detail", fmt.Sprintf("%d records awaiting acknowledgment", n)})}
	}
	if err := s.publish(obj["asset_id"].(string), value, id, claims.ClientID); err != nil {
		return Reply{Status: 500, RequestID: id, Body: errorBody("error", "Failed to publish message", []string{"detail", err.Error()})}
	}
	return Reply{Status: 200, RequestID: id, Body: successBody}
}

// publish sends one record and waits for its acks=all acknowledgment; the
// client batches concurrent records per partition (linger, batch bytes).
func (s *Service) publish(key string, value []byte, requestID, clientID string) error {
	rec := &kgo.Record{
		Topic: s.topic,
		Key:   []byte(key),
		Value: value,
		Headers: []kgo.RecordHeader{
			{Key: "x-request-id", Value: []byte(requestID)},
			{Key: "client-id", Value: []byte(clientID)},
			{Key: "schema", Value: []byte(schemaHeader)},
		},
	}
	done := make(chan error, 1)
	s.pending.Add(1)
	s.kafka.Produce(context.Background(), rec, func(_ *kgo.Record, err error) {
		s.pending.Add(-1)
		done <- err
	})
	timer := time.NewTimer(s.timeout)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		return fmt.Errorf("no acknowledgment within %d ms", s.timeout.Milliseconds())
	}
}

// messageValue is toMessage's value: the received bytes with the three
// fields spliced in before the closing brace, or, when the record already
// has one of them, JSON.stringify({ ...record, ...extra }).
func messageValue(record map[string]any, raw []byte, clientID, requestID string, now time.Time) ([]byte, error) {
	receivedAt := now.UTC().Format("2006-01-02T15:04:05.000Z")
	_, a := record["client_id"]
	_, b := record["received_at"]
	_, c := record["request_id"]
	end := bytes.LastIndexByte(raw, '}')
	if a || b || c || end <= 0 {
		return stringifyWith(raw, []string{"client_id", clientID, "received_at", receivedAt, "request_id", requestID})
	}
	out := make([]byte, 0, end+len(clientID)+len(requestID)+80)
	out = append(out, raw[:end]...)
	out = append(out, `,"client_id":`...)
	out = appendJSString(out, clientID)
	out = append(out, `,"received_at":"`...)
	out = append(out, receivedAt...)
	out = append(out, `","request_id":`...)
	out = appendJSString(out, requestID)
	return append(out, '}'), nil
}

// headerErrors is record.ts's headerErrors.
func headerErrors(r *Request, requestID *regexp.Regexp) []FieldError {
	var out []FieldError
	if !isJSONType(r.ContentType) {
		out = append(out, FieldError{"contentType", "must be application/json"})
	}
	switch {
	case r.RequestID == "":
		out = append(out, FieldError{"xRequestId", "is required"})
	case !requestID.MatchString(r.RequestID):
		out = append(out, FieldError{"xRequestId", "must be 1 to 200 visible ASCII characters"})
	}
	switch {
	case r.RequestTimestamp == "":
		out = append(out, FieldError{"xRequestTimestamp", "is required"})
	case !isEpochSeconds(r.RequestTimestamp):
		out = append(out, FieldError{"xRequestTimestamp", "must be Unix epoch seconds (an integer)"})
	}
	return out
}

// isJSONType is /^application\/json\s*(;|$)/i.
func isJSONType(v string) bool {
	const t = "application/json"
	if len(v) < len(t) || !asciiEqualFold(v[:len(t)], t) {
		return false
	}
	rest := v[len(t):]
	for _, r := range rest {
		if r == ';' {
			return true
		}
		if !isJSSpace(r) {
			return false
		}
	}
	return true
}

func asciiEqualFold(a, b string) bool {
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if x >= 'A' && x <= 'Z' {
			x += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

func isEpochSeconds(v string) bool {
	return len(v) >= 1 && len(v) <= 12 && isIndex(v)
}

func errorBody(status, message string, extra []string) []byte {
	out := []byte(`{"status":`)
	out = appendJSString(out, status)
	out = append(out, `,"message":`...)
	out = appendJSString(out, message)
	for i := 0; i+1 < len(extra); i += 2 {
		out = append(out, ',')
		out = appendJSString(out, extra[i])
		out = append(out, ':')
		out = appendJSString(out, extra[i+1])
	}
	return append(out, '}')
}

func validationBody(problems []FieldError) []byte {
	out := []byte(`{"status":"validation_error","message":"Validation failed","errors":{`)
	seen := map[string]bool{}
	first := true
	for _, p := range problems {
		if seen[p.Key] {
			continue
		}
		seen[p.Key] = true
		if !first {
			out = append(out, ',')
		}
		first = false
		out = appendJSString(out, p.Key)
		out = append(out, ':')
		out = appendJSString(out, p.Message)
	}
	return append(out, "}}"...)
}

// plainError is the gateway's `plain` dialect, for its server-level 404 and 405.
func plainError(code, message string) []byte {
	out := []byte(`{"status":"error","code":`)
	out = appendJSString(out, code)
	out = append(out, `,"message":`...)
	out = appendJSString(out, message)
	return append(out, '}')
}

// tooLargeBody is the telemetry dialect's 413.
func tooLargeBody(limit int) []byte {
	n := strconv.Itoa(limit)
	return []byte(`{"status":"validation_error","message":"request body exceeds ` + n + ` bytes","errors":{"body":"must not exceed ` + n + ` bytes"}}`)
}

// newUUID is a random (version 4) UUID, as crypto.randomUUID makes.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	const hex = "0123456789abcdef"
	out := make([]byte, 0, 36)
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out = append(out, '-')
		}
		out = append(out, hex[c>>4], hex[c&0xf])
	}
	return string(out)
}
