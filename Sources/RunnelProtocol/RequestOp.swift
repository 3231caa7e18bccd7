/// The requests of protocol version 1.
public enum RequestOp: String, CaseIterable, Sendable {
    case pub, sub, unsub, create, complete, error, delete, list, stats, ping, auth

    /// The op spelled by the unescaped UTF-8 `name`, inside `buffer` (its request line),
    /// compared without allocating (see `EnvelopeKey.matching(_:in:)`).
    package static func matching(_ name: UnsafeRawBufferPointer, in buffer: UnsafeRawBufferPointer) -> RequestOp? {
        guard let packed = ByteMatch.packed(name, in: buffer) else { return nil }
        let count = name.count
        switch packed {
        case 0x62_7570 where count == 3: return .pub
        case 0x62_7573 where count == 3: return .sub
        case 0x7473_696C where count == 4: return .list
        case 0x676E_6970 where count == 4: return .ping
        case 0x6874_7561 where count == 4: return .auth
        case 0x62_7573_6E75 where count == 5: return .unsub
        case 0x72_6F72_7265 where count == 5: return .error
        case 0x73_7461_7473 where count == 5: return .stats
        case 0x6574_6165_7263 where count == 6: return .create
        case 0x6574_656C_6564 where count == 6: return .delete
        case 0x6574_656C_706D_6F63 where count == 8: return .complete
        default: return nil
        }
    }
}

/// What a request's `op` field names: one of ours, or something else (reply `unknown_op`).
public enum RequestOperation: Sendable, Equatable {
    case known(RequestOp)
    case unknown(String)
}
