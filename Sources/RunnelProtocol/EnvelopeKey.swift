/// The top-level request fields the scanner picks out while it validates a line; any other
/// field is reachable through `ScannedEnvelope.field(named:)`. The rare requests' own fields
/// (`list`'s `prefix`, `auth`'s `token`) are read so, to keep this table at 15 fields: with
/// more, every request's envelope grows past what its copies move cheaply, and every `pub`
/// pays for it (the figure: bench/README.md, "Figures behind comments in the code").
public enum EnvelopeKey: Int, CaseIterable, Sendable {
    case op, ref, subject, sid, value, ops, kind, capacity, message, from, durable, positions,
        conflate, key, delete

    /// The field's name on the wire.
    public var name: String {
        switch self {
        case .op: return "op"
        case .ref: return "ref"
        case .subject: return "subject"
        case .sid: return "sid"
        case .value: return "value"
        case .ops: return "ops"
        case .kind: return "kind"
        case .capacity: return "capacity"
        case .message: return "message"
        case .from: return "from"
        case .durable: return "durable"
        case .positions: return "positions"
        case .conflate: return "conflate"
        case .key: return "key"
        case .delete: return "delete"
        }
    }

    /// The key spelled by the unescaped UTF-8 `name`, compared without allocating: the name
    /// is packed into one integer (little-endian, as `ByteMatch.packed(_:in:)` does).
    @inline(__always) package static func matching(_ name: UnsafeRawBufferPointer) -> EnvelopeKey? {
        matching(name, in: name)
    }

    /// `matching(name)` for a name inside `buffer` (a request line), which lets the packing
    /// read eight bytes at once (`ByteMatch.packed(_:in:)`).
    @inline(__always) package static func matching(
        _ name: UnsafeRawBufferPointer, in buffer: UnsafeRawBufferPointer
    ) -> EnvelopeKey? {
        // The one name longer than eight bytes.
        if name.count == 9 { return name.elementsEqual("positions".utf8) ? .positions : nil }
        guard let packed = ByteMatch.packed(name, in: buffer) else { return nil }
        let count = name.count
        switch packed {
        case 0x706F where count == 2: return .op
        case 0x66_6572 where count == 3: return .ref
        case 0x64_6973 where count == 3: return .sid
        case 0x79_656B where count == 3: return .key
        case 0x6574_656C_6564 where count == 6: return .delete
        case 0x73_706F where count == 3: return .ops
        case 0x646E_696B where count == 4: return .kind
        case 0x65_756C_6176 where count == 5: return .value
        case 0x6D6F_7266 where count == 4: return .from
        case 0x65_6C62_6172_7564 where count == 7: return .durable
        case 0x74_6365_6A62_7573 where count == 7: return .subject
        case 0x65_6761_7373_656D where count == 7: return .message
        case 0x7974_6963_6170_6163 where count == 8: return .capacity
        case 0x6574_616C_666E_6F63 where count == 8: return .conflate
        default: return nil
        }
    }
}

/// Byte comparisons against ASCII literals, without building Strings.
package enum ByteMatch {
    /// Up to eight bytes packed into an integer, the first byte lowest; nil when longer.
    /// `bytes` lie inside `buffer` (or are it): when `buffer` holds eight bytes from the first
    /// of `bytes` on, one load and a mask pack them. Every request's keys and op are packed,
    /// and packing them a byte at a time cost about as much as the rest of their scan.
    @inline(__always) package static func packed(_ bytes: UnsafeRawBufferPointer, in buffer: UnsafeRawBufferPointer)
        -> UInt64?
    {
        let count = bytes.count
        guard count <= 8 else { return nil }
        if let first = bytes.baseAddress, let bufferStart = buffer.baseAddress,
            bufferStart + buffer.count - first >= 8
        {
            assert(first >= bufferStart && first + count <= bufferStart + buffer.count, "bytes inside buffer")
            let word = UInt64(littleEndian: first.loadUnaligned(as: UInt64.self))
            return count == 8 ? word : word & ((1 &<< UInt64(truncatingIfNeeded: count &* 8)) &- 1)
        }
        var packed: UInt64 = 0
        for index in 0..<count { packed |= UInt64(bytes[index]) << UInt64(index * 8) }
        return packed
    }
}
