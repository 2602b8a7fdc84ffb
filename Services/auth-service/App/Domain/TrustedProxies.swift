import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The networks whose `X-Real-IP` header we believe: the gateway's. A request from anywhere else is attributed to
/// its TCP peer, so a client cannot pick the address its failed sign-ins count against.
struct TrustedProxies: Sendable, Equatable {
    struct Network: Sendable, Equatable {
        var address: [UInt8]
        var prefixLength: Int

        func contains(_ candidate: [UInt8]) -> Bool {
            guard candidate.count == address.count else { return false }
            var remaining = prefixLength
            for (lhs, rhs) in zip(address, candidate) where remaining > 0 {
                let bits = min(remaining, 8)
                let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
                if lhs & mask != rhs & mask { return false }
                remaining -= bits
            }
            return true
        }
    }

    var networks: [Network]

    /// Parses `127.0.0.1/32, ::1, 10.0.0.0/8`; nil names the first entry that is not an address or network.
    static func parse(_ list: String) -> Result<TrustedProxies, InvalidEntry> {
        var networks: [Network] = []
        for entry in list.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !entry.isEmpty {
            let parts = entry.split(separator: "/", maxSplits: 1).map(String.init)
            guard let bytes = Self.bytes(of: parts[0]) else { return .failure(InvalidEntry(entry: entry)) }
            let maximum = bytes.count * 8
            let length = parts.count == 2 ? Int(parts[1]) : maximum
            guard let length, (0...maximum).contains(length) else { return .failure(InvalidEntry(entry: entry)) }
            networks.append(Network(address: bytes, prefixLength: length))
        }
        return .success(TrustedProxies(networks: networks))
    }

    struct InvalidEntry: Error, Equatable { var entry: String }

    func trusts(_ address: String) -> Bool {
        guard let bytes = Self.bytes(of: address) else { return false }
        return networks.contains { $0.contains(bytes) }
    }

    /// The client's address: the gateway's `X-Real-IP` when the peer is a trusted proxy and the header holds an
    /// address, the peer otherwise.
    func clientAddress(peer: String?, forwarded: String?) -> String {
        guard let peer else { return "unknown" }
        if trusts(peer), let forwarded = forwarded?.trimmingCharacters(in: .whitespaces),
           Self.bytes(of: forwarded) != nil
        {
            return forwarded
        }
        return peer
    }

    /// The 4 or 16 bytes of an IPv4 or IPv6 address in text form.
    static func bytes(of text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) }
        }
        return nil
    }
}
