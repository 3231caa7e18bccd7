import RunnelJSON

/// A replay subject's `retain_s` (version 1.3): how long it keeps a value, held in whole
/// milliseconds. The one rule for reading it, from `create` and from a `[[subjects]]` table,
/// and for showing it again.
package enum RetainAge {
    /// The most seconds taken: a thousand years, which any time in Unix ms can hold.
    package static let maxSeconds = 3.2e10

    /// `seconds` in milliseconds, rounded up (so at least 1); nil unless 0 < `seconds` ≤
    /// `maxSeconds`.
    package static func milliseconds(seconds: Double) -> Int64? {
        guard seconds > 0, seconds <= maxSeconds else { return nil }
        return Int64((seconds * 1000).rounded(.up))
    }

    /// `milliseconds` as `retain_s` shows it again.
    package static func seconds(milliseconds: Int64) -> Double { Double(milliseconds) / 1000 }

    /// `milliseconds` as `retain_s` is written in shapes and summaries: `90`, `1.5`.
    package static func text(milliseconds: Int64) -> String {
        JSONWriter.numberText(seconds(milliseconds: milliseconds))
    }

    /// What a `retain_s` must be, for the errors that refuse one.
    package static let requirement = "a number of seconds > 0 and at most \(JSONWriter.numberText(maxSeconds))"
}
