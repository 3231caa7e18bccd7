/// Substring search for `contains(s, t)` in time linear in both lengths (Knuth–Morris–Pratt on
/// UTF-8 bytes), so a large published string and a long pattern cannot stall a stage.
///
/// UTF-8 is self-synchronising, so a byte match is a match of whole Unicode scalars.
package enum ExpressionSubstring {
    package static func contains(_ haystack: String, _ needle: String) -> Bool {
        let pattern = Array(needle.utf8)
        if pattern.isEmpty { return true }
        let text = haystack.utf8
        if pattern.count > text.count { return false }
        // failure[i]: length of the longest proper prefix of pattern[0...i] that is also its suffix.
        var failure = [Int](repeating: 0, count: pattern.count)
        var length = 0
        for i in 1..<pattern.count {
            while length > 0, pattern[i] != pattern[length] { length = failure[length - 1] }
            if pattern[i] == pattern[length] { length += 1 }
            failure[i] = length
        }
        var matched = 0
        for byte in text {
            while matched > 0, byte != pattern[matched] { matched = failure[matched - 1] }
            if byte == pattern[matched] { matched += 1 }
            if matched == pattern.count { return true }
        }
        return false
    }
}
