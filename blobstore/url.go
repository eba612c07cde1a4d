package blobstore

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/minio/minio-go/v7/pkg/s3utils"

	"github.com/edgeindex/edgeindex/lease"
)

// S3Config says where an S3 store is and how to reach it. ParseURL fills
// it from a URL and the environment; String prints it without the
// credentials.
type S3Config struct {
	// Endpoint is the server's host[:port], without a scheme:
	// "s3.amazonaws.com" (the default of ParseURL) or "127.0.0.1:9000".
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
// not. Errors wrap lease.ErrInvalid and never quote a secret.
func ParseURL(raw string, getenv func(string) string) (S3Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	u, err := url.Parse(raw)
	if err != nil {
		return S3Config{}, lease.Invalidf("storage URL %q: %v", Redact(raw), redactErr(err))
	}
	if u.Scheme != "s3" {
		return S3Config{}, lease.Invalidf("storage URL %q: want s3://BUCKET/PREFIX", Redact(raw))
	}
	if u.Opaque != "" {
		return S3Config{}, lease.Invalidf("storage URL %q: want s3://BUCKET/PREFIX", Redact(raw))
	}
	c := S3Config{Bucket: u.Host, Prefix: strings.Trim(u.Path, "/")}
	if err := s3utils.CheckValidBucketName(c.Bucket); err != nil {
		return S3Config{}, lease.Invalidf("storage URL %q: bucket %q: %v", Redact(raw), c.Bucket, err)
	}
	if c.Prefix != "" {
		if err := CheckKey(c.Prefix); err != nil {
			return S3Config{}, lease.Invalidf("storage URL %q: prefix: %v", Redact(raw), err)
		}
	}
	q := u.Query()
	for k := range q {
		switch k {
		case "endpoint", "region", "tls", "path-style":
		default:
			return S3Config{}, lease.Invalidf("storage URL %q: unknown parameter %q (endpoint, region, tls, path-style)", Redact(raw), k)
		}
	}

	endpoint := q.Get("endpoint")
	if endpoint == "" {
		endpoint = getenv(EnvEndpointS3)
	}
	if endpoint == "" {
		endpoint = getenv(EnvEndpoint)
	}
	if endpoint == "" {
		endpoint = "s3.amazonaws.com"
	}
	if strings.Contains(endpoint, "://") {
		e, err := url.Parse(endpoint)
		if err != nil || e.Host == "" || e.Scheme != "http" && e.Scheme != "https" || strings.Trim(e.Path, "/") != "" || e.User != nil {
			return S3Config{}, lease.Invalidf("storage URL %q: endpoint %q: want host[:port] or http(s)://host[:port]", Redact(raw), Redact(endpoint))
		}
		c.DisableTLS = e.Scheme == "http"
		endpoint = e.Host
	}
	c.Endpoint = endpoint
	if v := q.Get("tls"); v != "" {
		tls, err := strconv.ParseBool(v)
		if err != nil {
			return S3Config{}, lease.Invalidf("storage URL %q: tls=%q: want true or false", Redact(raw), v)
		}
		c.DisableTLS = !tls
	}
	if v := q.Get("path-style"); v != "" {
		ps, err := strconv.ParseBool(v)
		if err != nil {
			return S3Config{}, lease.Invalidf("storage URL %q: path-style=%q: want true or false", Redact(raw), v)
		}
		c.PathStyle = ps
	}
	c.Region = q.Get("region")
	if c.Region == "" {
		c.Region = getenv(EnvRegion)
	}
	if c.Region == "" {
		c.Region = getenv(EnvRegionOld)
	}

	if u.User != nil {
		c.AccessKey = u.User.Username()
		c.SecretKey, _ = u.User.Password()
		if c.AccessKey == "" || c.SecretKey == "" {
			return S3Config{}, lease.Invalidf("storage URL %q: credentials in a URL are ACCESS_KEY:SECRET_KEY@", Redact(raw))
		}
	} else {
		c.AccessKey = getenv(EnvAccessKey)
		c.SecretKey = getenv(EnvSecretKey)
		c.SessionToken = getenv(EnvSessionToken)
	}
	if c.AccessKey == "" || c.SecretKey == "" {
		return S3Config{}, lease.Invalidf("storage URL %q: no credentials: set %s and %s", Redact(raw), EnvAccessKey, EnvSecretKey)
	}
	return c, nil
}

// Redact returns a URL with its password, and the values of parameters
// other than endpoint, region, tls and path-style (a secret given under a
// wrong name), replaced by "xxxxx", for logs; a string that is no URL
// comes back as "(a URL that does not parse)" when it might hold a secret.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if strings.ContainsAny(raw, "@?") {
			return "(a URL that does not parse)"
		}
		return raw
	}
	if u.RawQuery != "" {
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			u.RawQuery = "xxxxx"
		} else {
			for k, vs := range q {
				for i, v := range vs {
					switch k {
					case "endpoint":
						vs[i] = Redact(v)
					case "region", "tls", "path-style":
					default:
						vs[i] = "xxxxx"
					}
				}
			}
			u.RawQuery = q.Encode()
		}
	}
	return u.Redacted()
}

// redactErr keeps a parse error's reason but not the URL it quotes.
func redactErr(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return fmt.Errorf("%v", ue.Err)
	}
	return err
}
