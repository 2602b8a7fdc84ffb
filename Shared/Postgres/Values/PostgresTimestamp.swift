import Foundation

/// `timestamptz` text in and out, without `DateFormatter` (slow, and locale-dependent).
///
/// Every session runs with `TimeZone=UTC` and `DateStyle=ISO`, so the server prints `2026-11-22 17:08:00.5+00`.
enum PostgresTimestamp {
    /// `2026-11-22T17:08:00.500000Z`: PostgreSQL keeps microseconds, so more digits would be lost anyway.
    /// Infinite dates become `infinity`/`-infinity`. A NaN date, or one too far out to count in microseconds (beyond
    /// PostgreSQL's own range anyway), becomes text that the server refuses as a `timestamptz` (SQLSTATE 22007):
    /// converting it would stop the process. (Bound where the server reads text, such a value is stored as that text.)
    static func format(_ date: Date) -> String {
        let interval = date.timeIntervalSince1970
        if interval.isInfinite { return interval > 0 ? "infinity" : "-infinity" }
        let totalMicros = (interval * 1_000_000).rounded()
        guard abs(totalMicros) < 9.2e18 else { return "not a representable date" }  // also NaN: every comparison fails
        let micros = Int64(totalMicros)
        var seconds = micros / 1_000_000
        var fraction = micros % 1_000_000
        if fraction < 0 {
            fraction += 1_000_000
            seconds -= 1
        }
        var days = seconds / 86_400
        var secondOfDay = seconds % 86_400
        if secondOfDay < 0 {
            secondOfDay += 86_400
            days -= 1
        }
        let (year, month, day) = civilDate(fromDays: days)
        let yearText = year >= 0 ? pad(year, 4) : "-" + pad(-year, 4)
        return "\(yearText)-\(pad(month, 2))-\(pad(day, 2))T\(pad(secondOfDay / 3600, 2)):"
            + "\(pad(secondOfDay / 60 % 60, 2)):\(pad(secondOfDay % 60, 2)).\(pad(fraction, 6))Z"
    }

    /// Parses the server's ISO output: `YYYY-MM-DD HH:MM:SS[.ffffff]±HH[:MM[:SS]]`, optionally followed by ` BC`.
    /// `infinity` and `-infinity` map to `Date.distantFuture` / `Date.distantPast`.
    static func parse(_ text: String) -> Date? {
        if text == "infinity" { return .distantFuture }
        if text == "-infinity" { return .distantPast }
        var bytes = Array(text.utf8)
        var isBC = false
        if bytes.count > 3, bytes.suffix(3) == Array(" BC".utf8) {
            isBC = true
            bytes.removeLast(3)
        }
        var index = 0
        func number(_ maxDigits: Int) -> Int64? {
            var value: Int64 = 0
            var digits = 0
            while index < bytes.count, digits < maxDigits, let digit = bytes[index].asciiDigit {
                value = value * 10 + Int64(digit)
                index += 1
                digits += 1
            }
            return digits == 0 ? nil : value
        }
        func expect(_ character: Character) -> Bool {
            guard index < bytes.count, bytes[index] == character.asciiValue else { return false }
            index += 1
            return true
        }
        guard var year = number(9), expect("-"), let month = number(2), expect("-"), let day = number(2),
              expect(" ") || expect("T"), let hour = number(2), expect(":"), let minute = number(2), expect(":"),
              let second = number(2)
        else { return nil }
        var micros: Int64 = 0
        if expect(".") {
            var scale: Int64 = 100_000
            while index < bytes.count, let digit = bytes[index].asciiDigit {
                micros += Int64(digit) * scale
                scale /= 10
                index += 1
            }
        }
        var offsetSeconds: Int64 = 0
        if index < bytes.count {
            let sign: Int64
            if expect("+") { sign = 1 } else if expect("-") { sign = -1 } else if expect("Z") { sign = 0 } else {
                return nil
            }
            if sign != 0 {
                guard let hours = number(2) else { return nil }
                var offset = hours * 3600
                if expect(":"), let minutes = number(2) {
                    offset += minutes * 60
                    if expect(":"), let seconds = number(2) { offset += seconds }
                }
                offsetSeconds = sign * offset
            }
        }
        guard index == bytes.count, (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60,
              second < 61
        else { return nil }
        if isBC { year = 1 - year }  // 1 BC is year 0 in the proleptic Gregorian calendar
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        return Date(timeIntervalSince1970: Double(seconds) + Double(micros) / 1_000_000)
    }

    /// Days since 1970-01-01 in the proleptic Gregorian calendar (Howard Hinnant's `days_from_civil`).
    static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The inverse of ``daysFromCivil(year:month:day:)``.
    static func civilDate(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }
}

extension UInt8 {
    var asciiDigit: UInt8? { (48...57).contains(self) ? self - 48 : nil }
}

extension Date {
    /// The date as a `timestamptz` keeps it and reads back (whole microseconds, computed as ``PostgresTimestamp``
    /// parses): an answer made from a date before it is stored then equals one made from what is read back.
    public var inPostgresPrecision: Date {
        let micros = (timeIntervalSince1970 * 1_000_000).rounded()
        guard micros.isFinite, abs(micros) < 9.2e18 else { return self }
        let (seconds, fraction) = Int64(micros).quotientAndRemainder(dividingBy: 1_000_000)
        let (whole, part) = fraction < 0 ? (seconds - 1, fraction + 1_000_000) : (seconds, fraction)
        return Date(timeIntervalSince1970: Double(whole) + Double(part) / 1_000_000)
    }
}
