package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
)

// MaxURLLength bounds an endpoint's URL, in bytes.
const MaxURLLength = 2048

// refusedPrefixes are the ranges a delivery may not reach without
// Options.AllowPrivate, beside those netip.Addr's own predicates name
// (loopback, link-local, private, unspecified, multicast): addresses of
// the provider's network, or ones no public receiver has.
var refusedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),      // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),  // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),   // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),  // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),    // reserved, and the broadcast address
	netip.MustParsePrefix("64:ff9b::/96"),   // NAT64: an IPv4 address behind it
	netip.MustParsePrefix("64:ff9b:1::/48"), // local-use NAT64
	netip.MustParsePrefix("2002::/16"),      // 6to4: an IPv4 address inside it
	netip.MustParsePrefix("100::/64"),       // discard-only
	netip.MustParsePrefix("2001:db8::/32"),  // documentation
	netip.MustParsePrefix("fec0::/10"),      // deprecated site-local
	netip.MustParsePrefix("fd00:ec2::/32"),  // AWS's IPv6 metadata range (inside fc00::/7 too)
}

// Refused reports why a delivery may not connect to ip, "" if it may.
func Refused(ip netip.Addr) string {
	ip = ip.Unmap()
	switch {
	case !ip.IsValid():
		return "is not an IP address"
	case ip.IsLoopback():
		return "is a loopback address"
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return "is a link-local address (the cloud metadata address among them)"
	case ip.IsPrivate():
		return "is a private address"
	case ip.IsUnspecified():
		return "is the unspecified address"
	case ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
		return "is a multicast address"
	}
	for _, p := range refusedPrefixes {
		if p.Contains(ip) {
			return fmt.Sprintf("is in %s, which webhooks may not reach", p)
		}
	}
	if ownAddress(ip) {
		return "is an address of this server's own host"
	}
	return ""
}

// ownAddress reports whether ip is an address of one of this host's
// network interfaces: a public one reaches the server itself as surely as
// loopback does.
func ownAddress(ip netip.Addr) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return true // unknown: refused rather than guessed
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Unmap() == ip {
			return true
		}
	}
	return false
}

// CheckURL says what is wrong with raw as an endpoint's URL, "" if
// nothing: it must be an absolute http or https URL without user
// information, at most MaxURLLength bytes, and unless allowPrivate, its
// host must resolve (with resolver) to addresses Refused allows, every one
// of them.
func CheckURL(ctx context.Context, resolver *net.Resolver, raw string, allowPrivate bool) string {
	if len(raw) > MaxURLLength {
		return fmt.Sprintf("must be at most %d bytes", MaxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return "must be an absolute http or https URL"
	}
	if u.User != nil {
		return "must not carry a user or password"
	}
	if u.Hostname() == "" {
		return "must name a host"
	}
	if allowPrivate {
		return ""
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		if why := Refused(ip); why != "" {
			return fmt.Sprintf("%s %s; start the server with --webhook-allow-private to allow it", host, why)
		}
		return ""
	}
	ips, err := resolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		return fmt.Sprintf("the host %s does not resolve", host)
	}
	for _, ip := range ips {
		if why := Refused(ip); why != "" {
			return fmt.Sprintf("the host %s resolves to %s, which %s; start the server with --webhook-allow-private to allow it", host, ip.Unmap(), why)
		}
	}
	return ""
}

// errRefusedAddress is a connection refused by refuseAddress.
var errRefusedAddress = errors.New("webhook: refused address")

// refuseAddress is a net.Dialer's Control: it refuses to connect to an
// address Refused names, so that a host that resolved to a public address
// at registration and to a private one now (DNS rebinding) is not
// reached.
func refuseAddress(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if err != nil {
		return fmt.Errorf("%w: %s", errRefusedAddress, host)
	}
	if why := Refused(ip); why != "" {
		return fmt.Errorf("%w: %s %s", errRefusedAddress, ip, why)
	}
	return nil
}
