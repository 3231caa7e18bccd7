import RunnelExpression
import RunnelJSON
import RunnelUV

/// Builds the JSON arrays `collect`, `bufferWithTime`, `combineLatestWith` and `zipWith` send
/// by concatenating their items' bytes: `[` a `,` b `]`. An item nobody computed keeps the
/// exact bytes it was published with; a computed one is encoded once (its payload caches it).
enum RawArray {
    static func of(_ items: [Payload]) -> Payload {
        var capacity = 2
        for item in items { capacity += item.raw.count + 1 }
        var writer = JSONWriter(reservingCapacity: capacity)
        writer.append(UInt8(ascii: "["))
        for (position, item) in items.enumerated() {
            if position > 0 { writer.append(UInt8(ascii: ",")) }
            writer.write(item.raw)
        }
        writer.append(UInt8(ascii: "]"))
        return Payload(raw: RawJSON(validatedBuffer: writer.makeBuffer()))
    }
}
