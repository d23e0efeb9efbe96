package main

// POST /v1/asset/track:batch, NDJSON only: the gateway's trackBatch
// (src/telemetry/service.ts, batch.ts) for the bench's batch rows. Each line
// is checked as a one-record body is, the valid records are produced
// together (refused whole past the pending bound), and the answer lists
// every record's result by index, 200 when any was published (OTLP's rule).

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

const batchPath = "/v1/asset/track:batch"
const batchMaxRecords = 1000

func isNDJSONType(v string) bool {
	v = strings.ToLower(v)
	return strings.HasPrefix(v, "application/x-ndjson") || strings.HasPrefix(v, "application/jsonl")
}

// withIndex puts `"index":i` first in a one-record answer body.
func withIndex(i int, body []byte) []byte {
	out := append([]byte(`{"index":`), strconv.Itoa(i)...)
	out = append(out, ',')
	return append(out, body[1:]...)
}

func (s *Service) trackBatch(r *Request) Reply {
	id := s.RequestIDFor(r.RequestID)
	claims, refused := s.authorize(r, id)
	if refused != nil {
		return *refused
	}
	headers := *r
	if isNDJSONType(r.ContentType) {
		headers.ContentType = "application/json"
	} else {
		headers.ContentType = ""
	}
	if problems := headerErrors(&headers, s.requestID); len(problems) > 0 {
		return Reply{Status: 400, RequestID: id, Body: validationBody(problems)}
	}
	var lines [][]byte
	for _, line := range bytes.Split(r.Body, []byte{'\n'}) {
		if line = bytes.TrimSpace(line); len(line) > 0 {
			lines = append(lines, line)
		}
	}
	if len(lines) == 0 {
		return Reply{Status: 400, RequestID: id, Body: validationBody([]FieldError{{"body", "must hold at least one record"}})}
	}
	if len(lines) > batchMaxRecords {
		return Reply{Status: 413, RequestID: id, Body: errorBody("validation_error", fmt.Sprintf("batch holds more than %d records", batchMaxRecords), nil)}
	}
	results := make([][]byte, len(lines))
	var records []*kgo.Record
	var indexes []int
	now := time.Now()
	for i, line := range lines {
		raw := wellFormed(line)
		record, err := decodeJSON(raw)
		if err != nil {
			results[i] = withIndex(i, invalidJSONBody)
			continue
		}
		if problems := s.validator.Validate(record); len(problems) > 0 {
			results[i] = withIndex(i, validationBody(problems))
			continue
		}
		obj := record.(map[string]any)
		recordID := id + "#" + strconv.Itoa(i)
		value, err := messageValue(obj, raw, claims.ClientID, recordID, now)
		if err != nil {
			results[i] = withIndex(i, errorBody("error", "Internal error", []string{"detail", err.Error()}))
			continue
		}
		records = append(records, &kgo.Record{Topic: s.topic, Key: []byte(obj["asset_id"].(string)), Value: value, Headers: []kgo.RecordHeader{
			{Key: "x-request-id", Value: []byte(recordID)},
			{Key: "client-id", Value: []byte(claims.ClientID)},
			{Key: "schema", Value: []byte(schemaHeader)},
		}})
		indexes = append(indexes, i)
	}
	if len(records) > 0 {
		if n := s.pending.Load(); n+int64(len(records)) > s.maxPending {
			return Reply{Status: 503, RequestID: id, Headers: []string{"retry-after", "1"},
				Body: errorBody("error", "Too many records pending; retry later", []string{"detail", fmt.Sprintf("%d records awaiting acknowledgment", n)})}
		}
		errs := s.publishAll(records)
		for k, i := range indexes {
			if errs[k] == nil {
				results[i] = []byte(`{"index":` + strconv.Itoa(i) + `,"status":"accepted"}`)
			} else {
				results[i] = withIndex(i, errorBody("error", "Failed to publish message", []string{"detail", errs[k].Error()}))
			}
		}
	}
	accepted := 0
	for _, res := range results {
		if bytes.HasSuffix(res, []byte(`"status":"accepted"}`)) {
			accepted++
		}
	}
	status, code := "success", 200
	switch {
	case accepted == 0:
		status, code = "validation_error", 400
	case accepted < len(results):
		status = "partial_success"
	}
	out := []byte(`{"status":"` + status + `","message":"` + strconv.Itoa(accepted) + " of " + strconv.Itoa(len(results)) + ` records published","accepted":` + strconv.Itoa(accepted) + `,"rejected":` + strconv.Itoa(len(results)-accepted) + `,"results":[`)
	out = append(out, bytes.Join(results, []byte{','})...)
	out = append(out, "]}"...)
	return Reply{Status: code, RequestID: id, Body: out}
}

// publishAll produces every record and waits for each one's acks=all
// acknowledgment, or the deadline.
func (s *Service) publishAll(records []*kgo.Record) []error {
	errs := make([]error, len(records))
	type result struct {
		k   int
		err error
	}
	done := make(chan result, len(records))
	s.pending.Add(int64(len(records)))
	for k, rec := range records {
		k := k
		s.kafka.Produce(context.Background(), rec, func(_ *kgo.Record, err error) {
			s.pending.Add(-1)
			done <- result{k, err}
		})
	}
	answered := make([]bool, len(records))
	timer := time.NewTimer(s.timeout)
	defer timer.Stop()
	for n := 0; n < len(records); n++ {
		select {
		case r := <-done:
			errs[r.k] = r.err
			answered[r.k] = true
		case <-timer.C:
			late := fmt.Errorf("no acknowledgment within %d ms", s.timeout.Milliseconds())
			for k := range errs {
				if !answered[k] {
					errs[k] = late
				}
			}
			return errs
		}
	}
	return errs
}
