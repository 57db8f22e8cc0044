// Package storage puts backups into and reads them from S3-compatible object storage, through
// minio-go (a maintained client that speaks to AWS, MinIO, Ceph, versitygw and the like).
// Uploads stream: an object of unknown size is sent in multipart parts, never held whole in
// memory or on disk.
package storage

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Config says where objects go. Credentials are values read from a Secret by the caller;
// they are never logged and never part of an error.
type Config struct {
	// Endpoint is an http:// or https:// URL; empty means AWS S3.
	Endpoint string
	// Region of the bucket; empty lets the client discover it.
	Region string
	// Bucket holds the objects.
	Bucket string
	// Prefix is prepended to every key ("a/b" and "a/b/" mean the same).
	Prefix string
	// ForcePathStyle addresses the bucket in the path rather than the host name.
	ForcePathStyle bool
	// AccessKeyID and SecretAccessKey authenticate.
	AccessKeyID     string
	SecretAccessKey string
	// CA is a PEM bundle to trust for an https endpoint; empty trusts the system's roots.
	CA []byte
	// PartSize is the multipart part size in bytes; 0 means 16 MiB.
	PartSize uint64
	// Uploads is how many parts of one object are uploaded at once; 0 means 2. The stream is
	// read into that many part buffers (memory: Uploads × PartSize, whatever the object's
	// size), so that the producer keeps writing while earlier parts are sent.
	Uploads uint
}

// Store is one bucket and prefix.
type Store struct {
	client   *minio.Client
	bucket   string
	prefix   string
	partSize uint64
	uploads  uint
	// unsigned leaves the payload out of the request signature on a plain-http endpoint, as
	// minio-go always does on https (see Put).
	unsigned bool
}

// New returns a Store for c. It does not contact the endpoint.
func New(c Config) (*Store, error) {
	endpoint, secure := "s3.amazonaws.com", true
	if c.Endpoint != "" {
		u, err := url.Parse(c.Endpoint)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, fmt.Errorf("storage endpoint %q: want an http:// or https:// URL", c.Endpoint)
		}
		endpoint, secure = u.Host, u.Scheme == "https"
	}
	if c.Bucket == "" {
		return nil, errors.New("storage: bucket is empty")
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if len(c.CA) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(c.CA) {
			return nil, errors.New("storage: CA bundle holds no PEM certificate")
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	lookup := minio.BucketLookupAuto
	if c.ForcePathStyle {
		lookup = minio.BucketLookupPath
	}
	client, err := minio.New(endpoint, &minio.Options{
		Creds:        credentials.NewStaticV4(c.AccessKeyID, c.SecretAccessKey, ""),
		Secure:       secure,
		Region:       c.Region,
		BucketLookup: lookup,
		Transport:    transport,
	})
	if err != nil {
		return nil, fmt.Errorf("storage client for %s: %w", endpoint, err)
	}
	ps := c.PartSize
	if ps == 0 {
		ps = 16 << 20
	}
	uploads := c.Uploads
	if uploads == 0 {
		uploads = 2
	}
	return &Store{client: client, bucket: c.Bucket, prefix: strings.Trim(c.Prefix, "/"), partSize: ps, uploads: uploads, unsigned: !secure}, nil
}

// Key returns the object key of name under the store's prefix.
func (s *Store) Key(name string) string {
	if s.prefix == "" {
		return name
	}
	return path.Join(s.prefix, name)
}

// Location returns the s3:// URL of name.
func (s *Store) Location(name string) string { return "s3://" + s.bucket + "/" + s.Key(name) }

// Put streams r into object name and returns the bytes written.
func (s *Store) Put(ctx context.Context, name string, r io.Reader) (int64, error) {
	// One upload at a time would stall the producer (a backup tool) while each part is sent.
	// On plain http minio-go would sign every part's payload (a SHA-256 of every byte here and
	// another in the S3 server), which buys nothing against a network that can read and replace
	// the bytes anyway: the backup's own checksum, checked on every restore, is what proves the
	// object. So http sends it unsigned, as https always does.
	info, err := s.client.PutObject(ctx, s.bucket, s.Key(name), r, -1, minio.PutObjectOptions{
		PartSize: s.partSize, ContentType: "application/octet-stream",
		ConcurrentStreamParts: s.uploads > 1, NumThreads: s.uploads,
		DisableContentSha256: s.unsigned,
	})
	if err != nil {
		return 0, fmt.Errorf("upload %s: %w", s.Location(name), err)
	}
	return info.Size, nil
}

// Get opens object name for reading.
func (s *Store) Get(ctx context.Context, name string) (io.ReadCloser, error) {
	obj, err := s.client.GetObject(ctx, s.bucket, s.Key(name), minio.GetObjectOptions{})
	if err != nil {
		return nil, fmt.Errorf("download %s: %w", s.Location(name), err)
	}
	// GetObject is lazy: stat now so that a missing object is an error here, not on Read.
	if _, err := obj.Stat(); err != nil {
		obj.Close()
		return nil, fmt.Errorf("download %s: %w", s.Location(name), err)
	}
	return obj, nil
}

// Delete removes object name; a missing object is not an error.
func (s *Store) Delete(ctx context.Context, name string) error {
	if err := s.client.RemoveObject(ctx, s.bucket, s.Key(name), minio.RemoveObjectOptions{}); err != nil {
		return fmt.Errorf("delete %s: %w", s.Location(name), err)
	}
	return nil
}

// Exists reports whether object name exists.
func (s *Store) Exists(ctx context.Context, name string) (bool, error) {
	_, err := s.client.StatObject(ctx, s.bucket, s.Key(name), minio.StatObjectOptions{})
	if err == nil {
		return true, nil
	}
	if minio.ToErrorResponse(err).Code == "NoSuchKey" {
		return false, nil
	}
	return false, fmt.Errorf("stat %s: %w", s.Location(name), err)
}

// List returns the size of every object under dir (names relative to the store's prefix, as
// Put takes them), in one listing rather than a request per object.
func (s *Store) List(ctx context.Context, dir string) (map[string]int64, error) {
	prefix := strings.TrimSuffix(s.Key(dir), "/") + "/"
	out := map[string]int64{}
	for obj := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if obj.Err != nil {
			return nil, fmt.Errorf("list %s: %w", s.Location(dir), obj.Err)
		}
		name := obj.Key
		if s.prefix != "" {
			name = strings.TrimPrefix(name, s.prefix+"/")
		}
		out[name] = obj.Size
	}
	return out, nil
}
