// Command go-peer is the `telemetry` bench's strongest peer: POST
// /v1/asset/track written the way the fastest Go services are, doing the
// gateway's work with the gateway's rules (see README.md):
//
//   - token: RS256 against the gateway's JWKS (or a PEM key), iss/aud/exp and
//     the gateway's own claim rules, scope asset:track:write; verified tokens
//     cached by their text until they expire;
//   - headers Content-Type, X-Request-Id, X-Request-Timestamp and the body
//     validated against the gateway's own schema (exported from its build by
//     export-schema.mjs), failures as the gateway's `errors` map;
//   - one Kafka record per request through franz-go: idempotent, acks=all,
//     batched per partition with a linger; the answer waits for the ack;
//   - one access-log line per request at info, buffered.
//
// `go-peer count` instead reads a topic from the start and reports how many
// records it holds and whether each has the gateway's message shape.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"regexp"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "count" {
		if err := count(); err != nil {
			fail(err)
		}
		return
	}
	if err := serve(); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "go-peer: %v\n", err)
	os.Exit(1)
}

func env(name, def string) string {
	if v := strings.TrimSpace(os.Getenv(name)); v != "" {
		return v
	}
	return def
}

func intEnv(name string, def int) int {
	v := env(name, "")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		fail(fmt.Errorf("%s: bad value %q", name, v))
	}
	return n
}

func list(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func serve() error {
	brokers := list(env("KAFKA_BROKERS", ""))
	if len(brokers) == 0 {
		return errors.New("KAFKA_BROKERS is required")
	}
	rules, err := loadRules(env("SCHEMA_FILE", ""))
	if err != nil {
		return fmt.Errorf("SCHEMA_FILE: %w", err)
	}
	var validator RecordValidator
	switch kind := env("VALIDATOR", "compiled"); kind {
	case "compiled":
		validator, err = newCompiledValidator(rules.Schema)
	case "jsonschema":
		validator, err = newValidator(rules.Schema)
	default:
		err = fmt.Errorf("VALIDATOR: %q is neither compiled nor jsonschema", kind)
	}
	if err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	requestID, err := regexp.Compile(rules.RequestIDPattern)
	if err != nil {
		return fmt.Errorf("requestIdPattern: %w", err)
	}
	verifier, err := newVerifier(VerifierOptions{
		Issuer:    env("JWT_ISSUER", "http://127.0.0.1:8080/"),
		Audiences: list(env("JWT_AUDIENCE", "evidence-gateway")),
		JWKSURL:   env("JWKS_URL", ""),
		PEMFile:   env("JWT_PUBLIC_KEY_FILE", ""),
		CacheSize: intEnv("TOKEN_CACHE_SIZE", 10000),
	})
	if err != nil {
		return err
	}
	topic := env("TOPIC", "bench.go-peer.telemetry")
	timeout := time.Duration(intEnv("PUBLISH_TIMEOUT_MS", 10000)) * time.Millisecond
	client, err := producer(brokers, timeout)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ensureTopic(ctx, client, topic, intEnv("TOPIC_PARTITIONS", 6)); err != nil {
		return fmt.Errorf("topic %s: %w", topic, err)
	}

	if file := env("CPU_PROFILE", ""); file != "" {
		out, err := os.Create(file)
		if err != nil {
			return fmt.Errorf("CPU_PROFILE: %w", err)
		}
		if err := pprof.StartCPUProfile(out); err != nil {
			return fmt.Errorf("CPU_PROFILE: %w", err)
		}
		defer func() { pprof.StopCPUProfile(); _ = out.Close() }()
	}
	log := newAccessLog(env("LOG_LEVEL", "info"))
	svc := &Service{verifier: verifier, validator: validator, requestID: requestID, kafka: client, topic: topic,
		timeout: timeout, maxPending: int64(intEnv("MAX_PENDING", 20000)), maxBody: intEnv("MAX_BODY", 1<<20), log: log}

	ln, err := net.Listen("tcp", net.JoinHostPort(env("HOST", "127.0.0.1"), env("PORT", "0")))
	if err != nil {
		return err
	}
	server := env("HTTP_SERVER", "fasthttp")
	var shutdown func(context.Context)
	switch server {
	case "nethttp":
		shutdown = svc.serveNetHTTP(ln)
	case "fasthttp":
		shutdown = svc.serveFastHTTP(ln)
	default:
		return fmt.Errorf("HTTP_SERVER: %q is neither nethttp nor fasthttp", server)
	}
	say(map[string]any{"msg": "go-peer listening", "port": ln.Addr().(*net.TCPAddr).Port, "pid": os.Getpid(), "http": server, "validator": env("VALIDATOR", "compiled"), "topic": topic})

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	done, stop := context.WithTimeout(context.Background(), 15*time.Second)
	defer stop()
	shutdown(done)
	_ = client.Flush(done)
	client.Close()
	log.Close()
	answered := map[string]int64{}
	for status := range svc.statuses {
		if n := svc.statuses[status].Load(); n > 0 {
			answered[strconv.Itoa(status)] = n
		}
	}
	say(map[string]any{"msg": "go-peer stopped", "answered": answered})
	return nil
}

func say(line map[string]any) {
	b, _ := json.Marshal(line)
	fmt.Println(string(b))
}

// producer is franz-go's client set up as the gateway's producer is: acks=all,
// idempotent (franz-go's default), no compression (kafkajs sends none), the
// gateway's linger; records per partition batch up to BATCH_MAX_BYTES.
func producer(brokers []string, timeout time.Duration) (*kgo.Client, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.ClientID(env("KAFKA_CLIENT_ID", "go-peer")),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(time.Duration(intEnv("LINGER_MS", 5)) * time.Millisecond),
		kgo.ProducerBatchMaxBytes(int32(intEnv("BATCH_MAX_BYTES", 1000012))),
		kgo.RecordDeliveryTimeout(timeout),
		kgo.AllowIdempotentProduceCancellation(),
	}
	codec, err := compression(env("COMPRESSION", "none"))
	if err != nil {
		return nil, err
	}
	opts = append(opts, kgo.ProducerBatchCompression(codec))
	return kgo.NewClient(opts...)
}

func compression(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "none":
		return kgo.NoCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	}
	return kgo.NoCompression(), fmt.Errorf("COMPRESSION: %q is not none, snappy, lz4, zstd or gzip", name)
}

// ensureTopic creates the topic when missing, as the gateway does for its own.
func ensureTopic(ctx context.Context, client *kgo.Client, topic string, partitions int) error {
	admin := kadm.NewClient(client)
	res, err := admin.CreateTopic(ctx, int32(partitions), -1, nil, topic)
	// kadm returns the topic's own error as err too: a topic another peer made first is no error.
	if err == nil {
		err = res.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return err
	}
	return nil
}

// AccessLog writes one JSON line per request, as the gateway's pino does at
// info, through a buffer flushed every 100 ms (pino's asynchronous destination).
type AccessLog struct {
	mu      sync.Mutex
	w       *bufio.Writer
	enabled bool
	pid     []byte
	stop    chan struct{}
	done    chan struct{}
}

func newAccessLog(level string) *AccessLog {
	l := &AccessLog{w: bufio.NewWriterSize(os.Stdout, 64<<10), pid: strconv.AppendInt(nil, int64(os.Getpid()), 10), stop: make(chan struct{}), done: make(chan struct{})}
	l.enabled = level == "info" || level == "debug" || level == "trace"
	go func() {
		defer close(l.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				l.mu.Lock()
				_ = l.w.Flush()
				l.mu.Unlock()
			case <-l.stop:
				return
			}
		}
	}()
	return l
}

func (l *AccessLog) Request(reqID, method, route string, status int, took time.Duration) {
	if !l.enabled {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var b [256]byte
	line := append(b[:0], `{"level":30,"time":"`...)
	line = time.Now().UTC().AppendFormat(line, "2006-01-02T15:04:05.000Z")
	line = append(line, `","pid":`...)
	line = append(line, l.pid...)
	line = append(line, `,"reqId":`...)
	line = appendJSString(line, reqID)
	line = append(line, `,"method":`...)
	line = appendJSString(line, method)
	line = append(line, `,"route":`...)
	line = appendJSString(line, route)
	line = append(line, `,"status":`...)
	line = strconv.AppendInt(line, int64(status), 10)
	line = append(line, `,"ms":`...)
	line = strconv.AppendFloat(line, float64(took.Microseconds())/1000, 'f', 2, 64)
	line = append(line, `,"msg":"request"}`+"\n"...)
	_, _ = l.w.Write(line)
}

func (l *AccessLog) Close() {
	close(l.stop)
	<-l.done
	l.mu.Lock()
	_ = l.w.Flush()
	l.mu.Unlock()
}

// count reads TOPIC from the start to its end offsets and prints
// {"records":N,"bad":M,"firstBad":...}: bad records lack the key, a header or
// a field the gateway's message has. With DUMP=1, one line per record first
// ({partition, offset, key, headers, value}).
func count() error {
	brokers := list(env("KAFKA_BROKERS", ""))
	topic := env("TOPIC", "")
	if len(brokers) == 0 || topic == "" {
		return errors.New("count needs KAFKA_BROKERS and TOPIC")
	}
	client, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ends, err := kadm.NewClient(client).ListEndOffsets(ctx, topic)
	if err != nil {
		return err
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
		}
	})
	var records, bad int64
	firstBad := ""
	dump := env("DUMP", "") == "1"
	for len(want) > 0 {
		fetches := client.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("reading %s: %w (%d partitions not at their end)", topic, err, len(want))
		}
		fetches.EachError(func(_ string, _ int32, err error) { fmt.Fprintf(os.Stderr, "go-peer count: %v\n", err) })
		fetches.EachRecord(func(r *kgo.Record) {
			if end, ok := want[r.Partition]; !ok || r.Offset >= end {
				return
			}
			records++
			if dump {
				headers := map[string]string{}
				for _, h := range r.Headers {
					headers[h.Key] = string(h.Value)
				}
				say(map[string]any{"partition": r.Partition, "offset": r.Offset, "key": string(r.Key), "headers": headers, "value": string(r.Value)})
			}
			if why := checkMessage(r); why != "" {
				bad++
				if firstBad == "" {
					firstBad = fmt.Sprintf("partition %d offset %d: %s", r.Partition, r.Offset, why)
				}
			}
			if r.Offset+1 >= want[r.Partition] {
				delete(want, r.Partition)
			}
		})
	}
	say(map[string]any{"topic": topic, "records": records, "bad": bad, "firstBad": firstBad})
	return nil
}

func checkMessage(r *kgo.Record) string {
	headers := map[string]string{}
	for _, h := range r.Headers {
		headers[h.Key] = string(h.Value)
	}
	var v map[string]any
	if err := json.Unmarshal(r.Value, &v); err != nil {
		return "value is not a JSON object"
	}
	switch {
	case len(r.Key) == 0 || string(r.Key) != v["asset_id"]:
		return "key is not the asset_id"
	case headers["schema"] != schemaHeader:
		return "schema header missing"
	case headers["x-request-id"] == "" || headers["x-request-id"] != v["request_id"]:
		return "x-request-id header missing or not the request_id"
	case headers["client-id"] == "" || headers["client-id"] != v["client_id"]:
		return "client-id header missing or not the client_id"
	}
	if _, ok := v["received_at"].(string); !ok {
		return "received_at missing"
	}
	return ""
}
