import RunnelJSON
import RunnelProtocol
import RunnelServer
import RunnelUV

/// How a session's output becomes Server-Sent Events (docs/protocol.md, "The HTTP front
/// door"), written from values, not from lines: a subscription's `completed`, `error` and
/// `dropped` events (`SessionEvent`), the `closing` event, and the fields before a `next`
/// event's value (`id:` from its `EventPosition`).
///
/// Thread rules: pure functions, safe from any thread. Lifetime rule: holds nothing.
enum SSEFraming {
    /// The sid of a stream's subscription, as a JSON string's contents.
    static let sid = "sse"

    /// `event: NAME`, `data:` the event's members as an object (`{}` when none), the empty
    /// line: the members a line protocol's event line carries besides `ev` and `sid`.
    static func event(_ event: SessionEvent) -> [UInt8] {
        var data = ServerLineWriter.object()
        let name: String
        switch event {
        case .completed:
            name = "completed"
        case .error(let error):
            name = "error"
            data.members(of: error)
        case .dropped(let count):
            name = "dropped"
            if let count { data.member("count", integer: count) }
        case .synced(let position):
            // Its position is the `id:` a reconnecting browser resumes the table from.
            return framed("synced", id: position, data: &data)
        case .removed(let removal):
            // The position is the event's `id:`, as a `next`'s is.
            removal.write(into: &data, withPosition: false)
            return framed("removed", id: removal.position, data: &data)
        }
        return framed(name, data: &data)
    }

    /// The `closing` event: its reason's members as `data:`.
    static func closing(_ reason: ProtocolError) -> [UInt8] {
        var data = ServerLineWriter.closingObject(reason)
        return framed("closing", data: &data)
    }

    private static func framed(_ name: String, id: Position? = nil, data: inout ServerLineWriter) -> [UInt8] {
        var bytes = Array("event: \(name)\n".utf8)
        if let id { bytes += "id: \(id.description)\n".utf8 }
        bytes += "data: ".utf8
        bytes += data.finish()
        bytes += "\n\n".utf8
        return bytes
    }

    /// Calls `body` with what goes before a `next` event's value: `id: EPOCH:SEQ` and
    /// `data: ` when it has a position, else `data: `; put together on the stack from the
    /// position's bytes.
    @inline(__always)
    static func withFields(before position: EventPosition?, _ body: (UnsafeRawBufferPointer) -> Void) {
        let dataField: StaticString = "data: "
        guard let position else { return body(dataField.rawBytes) }
        let idField: StaticString = "id: "
        let epoch = position.epochAndColon
        let digits = position.seqDigits
        let capacity = idField.utf8CodeUnitCount + epoch.count + digits.count + 1 + dataField.utf8CodeUnitCount
        withUnsafeTemporaryAllocation(byteCount: capacity, alignment: 1) { start in
            let base = start.baseAddress!
            base.copyMemory(from: idField.utf8Start, byteCount: idField.utf8CodeUnitCount)
            var end = idField.utf8CodeUnitCount
            (base + end).copyMemory(from: epoch.baseAddress!, byteCount: epoch.count)
            end += epoch.count
            (base + end).copyMemory(from: digits.baseAddress!, byteCount: digits.count)
            end += digits.count
            base.storeBytes(of: UInt8(ascii: "\n"), toByteOffset: end, as: UInt8.self)
            (base + end + 1).copyMemory(from: dataField.utf8Start, byteCount: dataField.utf8CodeUnitCount)
            body(UnsafeRawBufferPointer(start))
        }
    }

    /// Whether `value` holds a line break: JSON allows a raw `\r` as whitespace between
    /// tokens, and a line protocol client can publish one; in SSE it would end the `data:`
    /// line.
    @inline(__always)
    static func hasLineBreak(_ value: UnsafeRawBufferPointer) -> Bool {
        value.contains(where: OneLineJSON.isLineBreak)
    }

    /// `value` with its line breaks, whitespace between tokens, turned into spaces.
    static func withoutLineBreaks(_ value: UnsafeRawBufferPointer) -> [UInt8] {
        value.map(OneLineJSON.unbroken)
    }
}
