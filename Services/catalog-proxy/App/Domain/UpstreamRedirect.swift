import Foundation

/// Which redirects from an upstream are followed. Only to the origins the proxy calls directly anyway (the
/// Rijksmuseum's resolver sends a record's id to its metadata on the data host), never from https to http, and at
/// most ``maximumHops`` in a row: a redirect anywhere else could turn the proxy against an address it would not call.
struct UpstreamRedirect: Sendable, Equatable {
    /// `scheme://host:port`, lower case, as ``origin(of:)`` writes them.
    let allowedOrigins: Set<String>
    static let maximumHops = 3

    enum Outcome: Sendable, Equatable {
        case follow(String)
        /// Why the redirect is not followed.
        case refuse(String)
    }

    init(allowing baseURLs: [String]) {
        allowedOrigins = Set(baseURLs.compactMap(Self.origin(of:)))
    }

    /// What to do with an answer of `status` with `location` to a request for `url`; nil when it is no redirect.
    func next(status: Int, location: String?, from url: String, hops: Int) -> Outcome? {
        guard [301, 302, 303, 307, 308].contains(status) else { return nil }
        guard !allowedOrigins.isEmpty else { return .refuse("redirects from this upstream are not followed") }
        guard hops < Self.maximumHops else { return .refuse("more than \(Self.maximumHops) redirects") }
        guard let location, let base = URL(string: url),
              let target = URL(string: location, relativeTo: base)?.absoluteURL,
              let origin = Self.origin(of: target.absoluteString)
        else { return .refuse("a redirect without a usable Location") }
        if base.scheme?.lowercased() == "https" && target.scheme?.lowercased() != "https" {
            return .refuse("a redirect from https to \(target.scheme ?? "nothing")")
        }
        guard allowedOrigins.contains(origin) else { return .refuse("a redirect to \(origin), which we do not call") }
        return .follow(target.absoluteString)
    }

    /// `https://Data.Rijksmuseum.nl/x` → `https://data.rijksmuseum.nl:443`; nil without a scheme and host.
    static func origin(of url: String) -> String? {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
              ["http", "https"].contains(scheme), let host = components.host?.lowercased(), !host.isEmpty
        else { return nil }
        return "\(scheme)://\(host):\(components.port ?? (scheme == "https" ? 443 : 80))"
    }
}
