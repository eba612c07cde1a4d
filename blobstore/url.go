package blobstore

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/minio/minio-go/v7/pkg/s3utils"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/internal/redact"
)

// S3Config says where an S3 store is and how to reach it. ParseURL fills
// it from a URL and the environment; String prints it without the
// credentials.
type S3Config struct {
	// Endpoint is the server's host[:port], without a scheme:
	// DefaultEndpoint, "s3.amazonaws.com" (the default) or "127.0.0.1:9000".
	Endpoint string
	Bucket   string
	// Prefix is where in the bucket the store's keys begin, without a
	// leading or trailing '/'; "" is the whole bucket.
	Prefix string
	// Region is the bucket's region; "" lets the client ask the server.
	Region string
	// DisableTLS talks plain HTTP: only for a server on a trusted network.
	DisableTLS bool
	// PathStyle addresses the bucket as host/bucket rather than as
	// bucket.host (most S3-compatible servers want it).
	PathStyle bool

	AccessKey    string
	SecretKey    string
	SessionToken string // for temporary credentials; may be empty

	// Transport, when set, carries the requests; nil is a transport of
	// the store's own, whose idle connections Close closes.
	Transport http.RoundTripper
}

// String prints the configuration as a URL without credentials, for logs
// and error messages.
func (c S3Config) String() string {
	u := url.URL{Scheme: "s3", Host: c.Bucket}
	if c.Prefix != "" {
		u.Path = "/" + c.Prefix
	}
	// Built by hand, to keep the endpoint's ':' as it is.
	var q strings.Builder
	q.WriteString("endpoint=" + strings.ReplaceAll(url.QueryEscape(c.Endpoint), "%3A", ":"))
	if c.Region != "" {
		q.WriteString("&region=" + url.QueryEscape(c.Region))
	}
	q.WriteString("&tls=" + strconv.FormatBool(!c.DisableTLS))
	q.WriteString("&path-style=" + strconv.FormatBool(c.PathStyle))
	u.RawQuery = q.String()
	return u.String()
}

// Environment variables ParseURL reads: the AWS SDKs' own names.
const (
	EnvAccessKey    = "AWS_ACCESS_KEY_ID"
	EnvSecretKey    = "AWS_SECRET_ACCESS_KEY"
	EnvSessionToken = "AWS_SESSION_TOKEN"
	EnvRegion       = "AWS_REGION"
	EnvRegionOld    = "AWS_DEFAULT_REGION"
	EnvEndpoint     = "AWS_ENDPOINT_URL"
	EnvEndpointS3   = "AWS_ENDPOINT_URL_S3"
)

// ParseURL reads an S3 store's URL,
//
//	s3://[ACCESS_KEY:SECRET_KEY@]BUCKET[/PREFIX][?endpoint=HOST[:PORT]&region=R&tls=BOOL&path-style=BOOL]
//
// The URL's parameters come first; what it leaves out is read from the
// environment through getenv (nil: os.Getenv): the endpoint from
// AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL ("http://host:port" there also
// turns TLS off), the region from AWS_REGION or AWS_DEFAULT_REGION, the
// credentials from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
// AWS_SESSION_TOKEN. With no endpoint it is AWS's, "s3.amazonaws.com",
// with TLS. endpoint may also be given as a URL, "http://host:port".
// Credentials in the URL itself are for tests and S3-compatible servers:
// a command line is seen by every user of the machine, the environment is
// not. Errors wrap edgeindex.ErrInvalid and never quote a secret.
func ParseURL(raw string, getenv func(string) string) (S3Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	invalid := func(format string, args ...any) error {
		return edgeindex.Invalidf("storage URL %q: %s", Redact(raw), fmt.Sprintf(format, args...))
	}
	u, err := url.Parse(raw)
	if err != nil {
		return S3Config{}, invalid("%v", redactErr(err))
	}
	if u.Scheme != "s3" || u.Opaque != "" {
		return S3Config{}, invalid("want s3://BUCKET/PREFIX")
	}
	c := S3Config{Bucket: u.Host, Prefix: strings.Trim(u.Path, "/")}
	if err := s3utils.CheckValidBucketName(c.Bucket); err != nil {
		return S3Config{}, invalid("bucket %q: %v", c.Bucket, err)
	}
	if c.Prefix != "" {
		if err := CheckKey(c.Prefix); err != nil {
			return S3Config{}, invalid("prefix: %v", err)
		}
	}
	q := u.Query()
	for k := range q {
		if !slices.Contains(urlParams, k) {
			return S3Config{}, invalid("unknown parameter %q (endpoint, region, tls, path-style)", k)
		}
	}
	if err := c.setEndpoint(q, getenv, invalid); err != nil {
		return S3Config{}, err
	}
	c.Region = cmp.Or(q.Get("region"), getenv(EnvRegion), getenv(EnvRegionOld))
	if err := c.setCredentials(u.User, getenv, invalid); err != nil {
		return S3Config{}, err
	}
	return c.withDefaults(), nil
}

// urlParams are the query parameters of a storage URL: none of them is a
// secret, so Redact shows them.
var urlParams = []string{"endpoint", "region", "tls", "path-style"}

// setEndpoint reads the endpoint (the URL's, else AWS_ENDPOINT_URL_S3's or
// AWS_ENDPOINT_URL's; an http:// one turns TLS off) and the tls and
// path-style parameters. A missing endpoint stays empty: withDefaults
// makes it AWS's.
func (c *S3Config) setEndpoint(q url.Values, getenv func(string) string, invalid func(string, ...any) error) error {
	endpoint := cmp.Or(q.Get("endpoint"), getenv(EnvEndpointS3), getenv(EnvEndpoint))
	if strings.Contains(endpoint, "://") {
		e, err := url.Parse(endpoint)
		if err != nil || e.Host == "" || e.Scheme != "http" && e.Scheme != "https" || strings.Trim(e.Path, "/") != "" || e.User != nil {
			return invalid("endpoint %q: want host[:port] or http(s)://host[:port]", Redact(endpoint))
		}
		c.DisableTLS = e.Scheme == "http"
		endpoint = e.Host
	}
	c.Endpoint = endpoint
	for _, p := range []struct {
		name string
		set  func(bool)
	}{
		{"tls", func(v bool) { c.DisableTLS = !v }},
		{"path-style", func(v bool) { c.PathStyle = v }},
	} {
		if v := q.Get(p.name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return invalid("%s=%q: want true or false", p.name, v)
			}
			p.set(b)
		}
	}
	return nil
}

// setCredentials takes the URL's credentials, else the environment's.
func (c *S3Config) setCredentials(user *url.Userinfo, getenv func(string) string, invalid func(string, ...any) error) error {
	if user != nil {
		c.AccessKey = user.Username()
		c.SecretKey, _ = user.Password()
		if c.AccessKey == "" || c.SecretKey == "" {
			return invalid("credentials in a URL are ACCESS_KEY:SECRET_KEY@")
		}
		return nil
	}
	c.AccessKey = getenv(EnvAccessKey)
	c.SecretKey = getenv(EnvSecretKey)
	c.SessionToken = getenv(EnvSessionToken)
	if c.AccessKey == "" || c.SecretKey == "" {
		return invalid("no credentials: set %s and %s", EnvAccessKey, EnvSecretKey)
	}
	return nil
}

// Redact returns a storage URL with its password, and the values of
// parameters other than endpoint, region, tls and path-style (a secret
// given under a wrong name), hidden, for logs (internal/redact); a string
// that is no URL is not shown at all.
func Redact(raw string) string { return redact.URLShowing(raw, urlParams...) }

// redactErr keeps a parse error's reason but not the URL it quotes.
func redactErr(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return fmt.Errorf("%v", ue.Err)
	}
	return err
}
