package main

// The two HTTP front ends: Go's net/http and valyala/fasthttp, each a thin
// adapter from its request type to Service.Track.

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// route answers what is not POST /v1/asset/track or /v1/asset/track:batch, as the gateway's router does.
func (s *Service) route(method, path string) *Reply {
	if path != trackPath && path != batchPath {
		return &Reply{Status: 404, Body: plainError("not_found", "no route for "+method+" "+path)}
	}
	if method != "POST" {
		return &Reply{Status: 405, Body: plainError("method_not_allowed", method+" is not allowed on "+path)}
	}
	return nil
}

// --- net/http

var bodyPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

func (s *Service) netHTTPHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started := time.Now()
		auth, hasAuth := r.Header["Authorization"]
		req := Request{Method: r.Method, Path: r.URL.Path, ContentType: r.Header.Get("Content-Type"),
			RequestID: r.Header.Get("X-Request-Id"), RequestTimestamp: r.Header.Get("X-Request-Timestamp"), HasAuthorization: hasAuth}
		if hasAuth {
			req.Authorization = auth[0]
		}
		if rep := s.route(r.Method, r.URL.Path); rep != nil {
			rep.RequestID = s.RequestIDFor(req.RequestID)
			s.finish(&req, rep, started)
			writeNetHTTP(w, rep, false)
			return
		}
		if r.ContentLength > int64(s.maxBody) {
			rep := Reply{Status: 413, Body: tooLargeBody(s.maxBody), RequestID: s.RequestIDFor(req.RequestID)}
			s.finish(&req, &rep, started)
			writeNetHTTP(w, &rep, true)
			return
		}
		buf := bodyPool.Get().(*[]byte)
		defer bodyPool.Put(buf)
		body, err := readAll((*buf)[:0], http.MaxBytesReader(w, r.Body, int64(s.maxBody)))
		*buf = body[:0]
		if err != nil {
			var tooLarge *http.MaxBytesError
			if !errors.As(err, &tooLarge) {
				return // the client went away mid-body
			}
			rep := Reply{Status: 413, Body: tooLargeBody(s.maxBody), RequestID: s.RequestIDFor(req.RequestID)}
			s.finish(&req, &rep, started)
			writeNetHTTP(w, &rep, true)
			return
		}
		req.Body = body
		rep := s.Track(&req, started)
		writeNetHTTP(w, &rep, false)
	})
}

func readAll(b []byte, r io.Reader) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

func writeNetHTTP(w http.ResponseWriter, rep *Reply, closeConn bool) {
	h := w.Header()
	h["X-Request-Id"] = []string{rep.RequestID}
	h["Content-Type"] = []string{"application/json"}
	for i := 0; i+1 < len(rep.Headers); i += 2 {
		h.Set(rep.Headers[i], rep.Headers[i+1])
	}
	if closeConn {
		h.Set("Connection", "close")
	}
	w.WriteHeader(rep.Status)
	_, _ = w.Write(rep.Body)
}

// serveNetHTTP serves on ln; the function it returns stops accepting and waits for the handlers.
func (s *Service) serveNetHTTP(ln net.Listener) func(context.Context) {
	srv := &http.Server{Handler: s.netHTTPHandler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return func(ctx context.Context) { _ = srv.Shutdown(ctx) }
}

// --- fasthttp

func (s *Service) fastHTTPHandler(ctx *fasthttp.RequestCtx) {
	started := time.Now()
	h := &ctx.Request.Header
	auth := h.Peek("Authorization")
	req := Request{Method: string(ctx.Method()), Path: string(ctx.Path()), ContentType: string(h.ContentType()),
		RequestID: string(h.Peek("X-Request-Id")), RequestTimestamp: string(h.Peek("X-Request-Timestamp")),
		HasAuthorization: auth != nil, Authorization: string(auth)}
	if rep := s.route(req.Method, req.Path); rep != nil {
		rep.RequestID = s.RequestIDFor(req.RequestID)
		s.finish(&req, rep, started)
		writeFastHTTP(ctx, rep)
		return
	}
	req.Body = ctx.PostBody()
	rep := s.Track(&req, started)
	writeFastHTTP(ctx, &rep)
}

func writeFastHTTP(ctx *fasthttp.RequestCtx, rep *Reply) {
	ctx.SetStatusCode(rep.Status)
	ctx.Response.Header.Set("X-Request-Id", rep.RequestID)
	ctx.SetContentType("application/json")
	for i := 0; i+1 < len(rep.Headers); i += 2 {
		ctx.Response.Header.Set(rep.Headers[i], rep.Headers[i+1])
	}
	ctx.SetBody(rep.Body)
}

func (s *Service) serveFastHTTP(ln net.Listener) func(context.Context) {
	srv := &fasthttp.Server{
		Handler:            s.fastHTTPHandler,
		MaxRequestBodySize: s.maxBody,
		// The body limit's answer in the gateway's words (fasthttp's own is text).
		ErrorHandler: func(ctx *fasthttp.RequestCtx, err error) {
			started := time.Now()
			req := Request{Method: string(ctx.Method()), Path: string(ctx.Path()), RequestID: string(ctx.Request.Header.Peek("X-Request-Id"))}
			rep := Reply{Status: 400, Body: plainError("bad_request", err.Error())}
			if errors.Is(err, fasthttp.ErrBodyTooLarge) || strings.Contains(err.Error(), "body size exceeds") {
				rep = Reply{Status: 413, Body: tooLargeBody(s.maxBody)}
			}
			rep.RequestID = s.RequestIDFor(req.RequestID)
			s.finish(&req, &rep, started)
			writeFastHTTP(ctx, &rep)
			ctx.SetConnectionClose()
		},
		NoDefaultServerHeader: true,
		IdleTimeout:           120 * time.Second,
		ReadTimeout:           0,
	}
	go func() { _ = srv.Serve(ln) }()
	return func(ctx context.Context) { _ = srv.ShutdownWithContext(ctx) }
}
