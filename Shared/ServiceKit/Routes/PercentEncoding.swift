import Foundation

extension String {
    /// The text with every byte outside RFC 3986's unreserved set percent-encoded: safe as one path segment or one
    /// query value, never able to add a segment, a query or a fragment.
    public var percentEncodedComponent: String {
        addingPercentEncoding(withAllowedCharacters: Self.unreserved) ?? ""
    }

    private static let unreserved = CharacterSet(charactersIn:
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
}
