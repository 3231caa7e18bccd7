import RunnelTestSupport

/// Publishes numbered ~1 KiB values to one subject in small batches and checks that a fast
/// subscriber receives every one of them, in order, after each batch.
///
/// Owned by one test thread. Batches stay far below the server's `max_pending_bytes` so the
/// fast subscriber, which reads after each batch, is never a slow consumer itself.
struct Flood {
    static let payload = String(repeating: "x", count: 1000)

    let subject: String
    let publisher: BlockingTCPClient
    let fast: BlockingTCPClient
    let fastSid: String
    /// How many values were published so far; value `n` is `[n, payload]`.
    private(set) var published = 0

    /// Publishes `size` values (the last with a ref), has the fast subscriber read them, and
    /// returns the `receivers` of the last one.
    mutating func batch(_ size: Int) throws -> Int? {
        var text = ""
        for n in published..<published + size {
            let ref = n == published + size - 1 ? #","ref":\#(n)"# : ""
            text += #"{"op":"pub","subject":"\#(subject)","value":[\#(n),"\#(Flood.payload)"]\#(ref)}"# + "\n"
        }
        try publisher.sendRaw(text)
        let reply = try publisher.readJSON()
        for n in published..<published + size { try expectFastEvent(n) }
        published += size
        return reply["receivers"]?.int
    }

    private func expectFastEvent(_ n: Int) throws {
        let expected = #"{"ev":"next","sid":"\#(fastSid)","value":[\#(n),"\#(Flood.payload)"]}"#
        guard let line = fast.readLine() else { throw HarnessError.timeout("fast subscriber missed value \(n)") }
        if line == expected { return }
        // Same content in another key order or spacing is fine; anything else is a loss.
        let event = try JSON.parse(line)
        guard event == ["ev": "next", "sid": .string(fastSid), "value": [.number(Double(n)), .string(Flood.payload)]]
        else { throw HarnessError.badJSON("fast subscriber expected value \(n), got \(line.prefix(120))") }
    }
}
