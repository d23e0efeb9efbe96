package main

// The bearer token check of the gateway's ingest routes (src/auth/jwt.ts,
// src/auth/tokens.ts): the same Authorization grammar, RS256 against the
// gateway's JWKS (or one PEM key), the same claim rules in jose's order, the
// same 401 details, the scope, and verified tokens cached by their text
// until they expire (a device sends the same token thousands of times).

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"
)

const maxTokenLifetime = 31 * 24 * time.Hour
const jwksCooldown = 30 * time.Second

// authError is a 401 (message: the spec's detail) or a 403.
type authError struct {
	status  int
	message string
}

func unauthorized(detail string) *authError { return &authError{401, detail} }

// Claims is what a request needs from a verified token.
type Claims struct {
	ClientID string
	scopes   map[string]bool
	expMs    float64
}

type VerifierOptions struct {
	Issuer    string
	Audiences []string
	JWKSURL   string
	PEMFile   string
	CacheSize int
}

type Verifier struct {
	opts VerifierOptions

	keysMu    sync.Mutex
	keys      map[string]*rsa.PublicKey // by kid, from the JWKS
	single    *rsa.PublicKey            // PEM_FILE: any kid
	fetchedAt time.Time

	cacheMu sync.RWMutex
	cache   map[string]*Claims
	fifo    []string // insertion order, for the gateway's oldest-first eviction
}

func newVerifier(opts VerifierOptions) (*Verifier, error) {
	if opts.CacheSize <= 0 {
		opts.CacheSize = 10000
	}
	v := &Verifier{opts: opts, cache: map[string]*Claims{}}
	switch {
	case opts.PEMFile != "":
		key, err := readPEMKey(opts.PEMFile)
		if err != nil {
			return nil, err
		}
		v.single = key
	case opts.JWKSURL != "":
		if err := v.fetchJWKS(); err != nil {
			return nil, err
		}
	default:
		return nil, errors.New("JWKS_URL or JWT_PUBLIC_KEY_FILE is required")
	}
	return v, nil
}

// Verify returns the token's claims, or the 401/403 the gateway would answer.
func (v *Verifier) Verify(authorization string, present bool, scope string) (*Claims, *authError) {
	token, aerr := bearerToken(authorization, present)
	if aerr != nil {
		return nil, aerr
	}
	nowMs := float64(time.Now().UnixMilli())
	v.cacheMu.RLock()
	c := v.cache[token]
	v.cacheMu.RUnlock()
	if c != nil && c.expMs <= nowMs {
		v.forget(token)
		c = nil
	}
	if c == nil {
		var err *authError
		if c, err = v.verifySignature(token, nowMs); err != nil {
			return nil, err
		}
		v.remember(token, c)
	}
	if !c.scopes[scope] {
		return nil, &authError{403, "token lacks scope " + scope}
	}
	return c, nil
}

func (v *Verifier) remember(token string, c *Claims) {
	v.cacheMu.Lock()
	defer v.cacheMu.Unlock()
	if _, known := v.cache[token]; !known {
		for len(v.cache) >= v.opts.CacheSize && len(v.fifo) > 0 {
			delete(v.cache, v.fifo[0])
			v.fifo = v.fifo[1:]
		}
		v.fifo = append(v.fifo, token)
	}
	v.cache[token] = c
}

func (v *Verifier) forget(token string) {
	v.cacheMu.Lock()
	defer v.cacheMu.Unlock()
	delete(v.cache, token)
	for i, t := range v.fifo {
		if t == token {
			v.fifo = append(v.fifo[:i], v.fifo[i+1:]...)
			break
		}
	}
}

// bearerToken is RFC 6750 §2.1 as src/auth/jwt.ts reads it, with its three details.
func bearerToken(h string, present bool) (string, *authError) {
	if !present {
		return "", unauthorized("missing Bearer token")
	}
	hasScheme := len(h) >= 6 && strings.EqualFold(h[:6], "bearer")
	if hasScheme {
		i := 6
		for i < len(h) && h[i] == ' ' {
			i++
		}
		start := i
		for i < len(h) && isB64TokenChar(h[i]) {
			i++
		}
		for i < len(h) && h[i] == '=' && i > start {
			i++
		}
		end := i
		for i < len(h) && h[i] == ' ' {
			i++
		}
		if start > 6 && end > start && i == len(h) {
			return h[start:end], nil
		}
		if strings.TrimRight(h[6:], " ") == "" {
			return "", unauthorized("empty Bearer token")
		}
	}
	if strings.TrimFunc(h, isJSSpace) == "" {
		return "", unauthorized("empty Bearer token")
	}
	if hasScheme && len(h) > 6 {
		if r, _ := utf8.DecodeRuneInString(h[6:]); isJSSpace(r) {
			return "", unauthorized("auth_failed:malformed")
		}
	}
	return "", unauthorized("missing Bearer token")
}

func isB64TokenChar(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/'
}

// jwtPart decodes a base64url segment as jose 6 does on Node 20 (atob after
// swapping the alphabet: padding optional, `+` and `/` refused).
func jwtPart(s string) ([]byte, bool) {
	if strings.ContainsAny(s, "+/") {
		return nil, false
	}
	s = strings.NewReplacer("-", "+", "_", "/").Replace(s)
	if len(s)%4 == 0 {
		s = strings.TrimSuffix(s, "=")
		s = strings.TrimSuffix(s, "=")
	}
	if len(s)%4 == 1 || strings.Contains(s, "=") {
		return nil, false
	}
	b, err := base64.RawStdEncoding.DecodeString(s)
	return b, err == nil
}

func jsonObject(b []byte) (map[string]any, bool) {
	if !utf8.Valid(b) {
		return nil, false
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return nil, false
	}
	return m, true
}

// verifySignature follows TokenVerifier.verifySignature and verifyJwt: the
// payload must decode, alg must be RS256, the key is found by kid, the
// signature holds, then jose's claim checks in jose's order, then the
// gateway's own (lifetime, iat, client_id).
func (v *Verifier) verifySignature(token string, nowMs float64) (*Claims, *authError) {
	malformed := unauthorized("auth_failed:malformed")
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, malformed
	}
	// decodeJwt first: the payload must be a JSON object (text decoded leniently) before anything else.
	payloadBytes, ok := jwtPart(parts[1])
	if !ok {
		return nil, malformed
	}
	if _, ok := jsonObject(wellFormed(payloadBytes)); !ok {
		return nil, malformed
	}
	headerBytes, ok := jwtPart(parts[0])
	if !ok {
		return nil, malformed
	}
	header, ok := jsonObject(headerBytes)
	if !ok || header["alg"] != "RS256" {
		return nil, malformed
	}
	key := v.key(header["kid"])
	if key == nil {
		return nil, unauthorized("auth_failed:invalid_signature")
	}
	sig, ok := jwtPart(parts[2])
	if !ok {
		return nil, malformed
	}
	if err := jwt.SigningMethodRS256.Verify(parts[0]+"."+parts[1], sig, key); err != nil {
		return nil, unauthorized("auth_failed:invalid_signature")
	}
	claims, ok := jsonObject(payloadBytes)
	if !ok {
		return nil, malformed
	}
	for _, c := range []struct{ claim, detail string }{{"iss", "auth_failed:wrong_issuer"}, {"aud", "auth_failed:wrong_audience"}, {"exp", "auth_failed:malformed"}} {
		if _, present := claims[c.claim]; !present {
			return nil, unauthorized(c.detail)
		}
	}
	if iss, _ := claims["iss"].(string); iss != v.opts.Issuer || claims["iss"] == nil {
		return nil, unauthorized("auth_failed:wrong_issuer")
	}
	if !v.audienceOK(claims["aud"]) {
		return nil, unauthorized("auth_failed:wrong_audience")
	}
	now := float64(int64(nowMs) / 1000)
	iat, iatOK := numericClaim(claims, "iat")
	nbf, nbfOK := numericClaim(claims, "nbf")
	if !iatOK || !nbfOK || (nbf != nil && *nbf > now) {
		return nil, malformed
	}
	exp, expOK := numericClaim(claims, "exp")
	if !expOK {
		return nil, malformed
	}
	if *exp <= now {
		return nil, unauthorized("auth_failed:expired")
	}
	nowS := nowMs / 1000
	if *exp > nowS+maxTokenLifetime.Seconds() || (iat != nil && *iat > nowS) {
		return nil, malformed
	}
	clientID, isString := claims["client_id"].(string)
	if !isString {
		clientID, _ = claims["sub"].(string)
	}
	if clientID == "" {
		return nil, malformed
	}
	scope, _ := claims["scope"].(string)
	scopes := map[string]bool{}
	for _, s := range strings.Split(scope, " ") {
		scopes[s] = true
	}
	return &Claims{ClientID: clientID, scopes: scopes, expMs: *exp * 1000}, nil
}

// numericClaim: absent is fine (nil), present must be a number.
func numericClaim(claims map[string]any, name string) (*float64, bool) {
	raw, present := claims[name]
	if !present {
		return nil, true
	}
	f, ok := raw.(float64)
	return &f, ok
}

func (v *Verifier) audienceOK(aud any) bool {
	has := func(s any) bool {
		for _, a := range v.opts.Audiences {
			if s == a {
				return true
			}
		}
		return false
	}
	switch x := aud.(type) {
	case string:
		return has(x)
	case []any:
		for _, e := range x {
			if has(e) {
				return true
			}
		}
	}
	return false
}

// key finds the public key for a kid; an unknown kid refetches the JWKS at
// most every 30 s (as jose's remote key set), since the gateway rotates keys.
func (v *Verifier) key(kid any) *rsa.PublicKey {
	if v.single != nil {
		return v.single
	}
	id, ok := kid.(string)
	if !ok {
		return nil
	}
	v.keysMu.Lock()
	defer v.keysMu.Unlock()
	if k := v.keys[id]; k != nil {
		return k
	}
	if time.Since(v.fetchedAt) < jwksCooldown {
		return nil
	}
	if err := v.fetchJWKSLocked(); err != nil {
		fmt.Fprintf(os.Stderr, "go-peer: JWKS refresh failed: %v\n", err)
	}
	return v.keys[id]
}

func (v *Verifier) fetchJWKS() error {
	v.keysMu.Lock()
	defer v.keysMu.Unlock()
	return v.fetchJWKSLocked()
}

func (v *Verifier) fetchJWKSLocked() error {
	v.fetchedAt = time.Now()
	client := http.Client{Timeout: 5 * time.Second}
	res, err := client.Get(v.opts.JWKSURL)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		return fmt.Errorf("%s answered %d", v.opts.JWKSURL, res.StatusCode)
	}
	var set struct {
		Keys []struct{ Kty, Kid, N, E string } `json:"keys"`
	}
	if err := json.NewDecoder(res.Body).Decode(&set); err != nil {
		return err
	}
	keys := map[string]*rsa.PublicKey{}
	for _, k := range set.Keys {
		n, errN := base64.RawURLEncoding.DecodeString(k.N)
		e, errE := base64.RawURLEncoding.DecodeString(k.E)
		if k.Kty != "RSA" || k.Kid == "" || errN != nil || errE != nil {
			continue
		}
		keys[k.Kid] = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
	}
	if len(keys) == 0 {
		return fmt.Errorf("%s holds no RSA key", v.opts.JWKSURL)
	}
	v.keys = keys
	return nil
}

func readPEMKey(file string) (*rsa.PublicKey, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("%s: no PEM block", file)
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	key, ok := pub.(*rsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("%s: not an RSA public key", file)
	}
	return key, nil
}
