extension JSONWriter {
    /// `,"key":`: the server's own keys never need escaping.
    mutating func key(_ key: StaticString) {
        append(",\"")
        append(key)
        append("\":")
    }
}
