import RunnelJSON

/// How `runnel sub` and `runnel map` write a map subject's key and a removal on a line
/// (version 1.3): `KEY<TAB>VALUE` for a write, `KEY<TAB>(removed: REASON)` for a removal. No
/// JSON value starts with `(`, so the two cannot be confused.
///
/// A key is written as it is, unless a line could not carry it back (it holds a control
/// character, such as a tab or a line break) or it could be read as one written that way (it
/// starts with `"`): it is then written as its JSON string, quotes and escapes included.
///
/// Thread rules: pure functions, any thread.
enum MapLine {
    /// The key as a line shows it, followed by the tab that ends it.
    static func keyField(_ key: String) -> String {
        let plain = !key.hasPrefix("\"") && !key.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }
        guard !plain else { return key + "\t" }
        var writer = JSONWriter()
        writer.writeString(key)
        return String(decoding: writer.bytes, as: UTF8.self) + "\t"
    }

    /// What follows the tab of a removed key: `(removed: REASON)`, the server's reason
    /// (`deleted`, `expired`) or `runnel map`'s own `missed`.
    static func removal(reason: String?) -> String { "(removed: \(reason ?? "unknown"))" }
}
