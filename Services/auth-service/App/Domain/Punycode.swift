/// Punycode (RFC 3492): how a domain label in any script is written in ASCII (`bücher` → `bcher-kva`, so
/// `bücher.example` is `xn--bcher-kva.example` on the wire). Ours because Foundation has no IDNA on Linux and none of
/// the packages we may use has an encoder; encoding is all we need (an A-label a client sends is kept as it is).
enum Punycode {
    private static let base = 36, tMin = 1, tMax = 26, skew = 38, damp = 700, initialBias = 72, initialN = 128

    /// The Punycode form of `label` (without the `xn--` prefix), or nil when it would overflow (never for a label
    /// of a real domain, which is short).
    static func encode(_ label: String) -> String? {
        let points = label.unicodeScalars.map { Int($0.value) }
        var output = String(String.UnicodeScalarView(label.unicodeScalars.filter(\.isASCII)))
        let basicCount = output.unicodeScalars.count
        if basicCount > 0 { output.append("-") }
        var n = initialN, delta = 0, bias = initialBias, handled = basicCount
        while handled < points.count {
            guard let next = points.filter({ $0 >= n }).min(), next - n <= (Int.max - delta) / (handled + 1)
            else { return nil }
            delta += (next - n) * (handled + 1)
            n = next
            for point in points {
                if point < n { delta += 1 }
                guard point == n else { continue }
                var q = delta, k = base
                while true {
                    let t = k <= bias ? tMin : (k >= bias + tMax ? tMax : k - bias)
                    if q < t { break }
                    output.append(digit(t + (q - t) % (base - t)))
                    q = (q - t) / (base - t)
                    k += base
                }
                output.append(digit(q))
                bias = adapt(delta, points: handled + 1, first: handled == basicCount)
                delta = 0
                handled += 1
            }
            delta += 1
            n += 1
        }
        return output
    }

    private static func digit(_ value: Int) -> Character {
        Character(Unicode.Scalar(UInt8(value < 26 ? 97 + value : 22 + value)))  // a–z, then 0–9
    }

    private static func adapt(_ delta: Int, points: Int, first: Bool) -> Int {
        var delta = first ? delta / damp : delta / 2
        delta += delta / points
        var k = 0
        while delta > ((base - tMin) * tMax) / 2 {
            delta /= base - tMin
            k += base
        }
        return k + (base - tMin + 1) * delta / (delta + skew)
    }
}
