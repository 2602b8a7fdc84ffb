import Foundation

/// Image URLs of hosts that serve any size of a picture from its URL, asked at the size a screen draws it: a list cell
/// (and a favorite) at about ``cellPixels``, a detail larger. The museum's pictures come from two such hosts: its IIIF
/// server (the size segment, `…/full/400,/0/default.jpg`) and Google's image hosting (a size suffix, `…=s400`,
/// where `=s0`, the original, runs to several megabytes). Any other URL is left as it is.
public enum SizedImage {
    /// A list cell's picture, in pixels (its width for IIIF, its longer side for Google's `=s`).
    public static let cellPixels = 400
    /// A detail's picture (Google-hosted; IIIF details keep the museum's `max`, which its server bounds).
    public static let detailPixels = 1600

    /// `url` at a list cell's size.
    public static func cell(_ url: String) -> String {
        iiif(url, width: cellPixels) ?? google(url, pixels: cellPixels) ?? url
    }

    /// `url` at a detail's size: Google-hosted pictures at ``detailPixels``, others as they are.
    public static func detail(_ url: String) -> String {
        google(url, pixels: detailPixels) ?? url
    }

    /// Whether `url` is a Google-hosted picture asked at its original size (`=s0`): a phone's cell must never load one.
    public static func isOriginalSize(_ url: String) -> Bool {
        isGoogleHosted(url) && url.hasSuffix("=s0")
    }

    /// A Google-hosted picture (`lh3.googleusercontent.com/<id>=s0`, `lh6.ggpht.com/<id>`) with its size suffix set to
    /// `=s<pixels>` (the longer side), whatever suffix it had (`=s0`, `=w800-h600`, none); nil for another host.
    static func google(_ url: String, pixels: Int) -> String? {
        guard isGoogleHosted(url), let components = URLComponents(string: url), components.query == nil,
              components.fragment == nil, let slash = url.lastIndex(of: "/")
        else { return nil }
        let name = url[url.index(after: slash)...]
        let base = name.lastIndex(of: "=").map { name[..<$0] } ?? name
        guard !base.isEmpty else { return nil }
        return url[...slash] + base + "=s\(pixels)"
    }

    private static func isGoogleHosted(_ url: String) -> Bool {
        guard let host = URLComponents(string: url)?.host?.lowercased() else { return false }
        return host.hasSuffix(".googleusercontent.com") || host.hasSuffix(".ggpht.com")
    }

    /// An IIIF image URL (`…/full/<size>/<rotation>/default.<format>`) at `width` pixels wide; nil for another URL.
    static func iiif(_ url: String, width: Int) -> String? {
        guard var components = URLComponents(string: url) else { return nil }
        var segments = components.path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard segments.count >= 5, segments[segments.count - 4] == "full",
              segments[segments.count - 1].hasPrefix("default.")
        else { return nil }
        segments[segments.count - 3] = "\(width),"
        components.path = segments.joined(separator: "/")
        return components.string
    }
}
