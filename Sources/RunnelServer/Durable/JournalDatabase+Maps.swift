import RunnelJSON
import RunnelProtocol

/// A map's keys in the journal (version 1.3, schema version 3): `keyvals` holds each live key's
/// latest write, replaced by the next write to the key and deleted with its removal; the
/// map's seq counter is its subject row's, as any durable subject's. What a map kept for `from`
/// is not stored: after a restart it resumes only a client at its latest position.
extension JournalDatabase {
    /// The live keys of the stored map `subject`, checked against its row.
    static func loadKeys(
        of subject: StoredSubject, from database: SQLiteDatabase, corrupt: (String) -> JournalError
    ) throws -> [(key: String, seq: UInt64, value: RawJSON, time: Int64)] {
        let rows = try database.statement("SELECT key, seq, value, ts FROM keyvals WHERE subject = ? ORDER BY seq")
        defer { rows.reset() }
        rows.bind(1, subject.id)
        var keys: [(key: String, seq: UInt64, value: RawJSON, time: Int64)] = []
        while try rows.step() {
            guard let key = rows.text(0), (try? MapKey.check(key)) != nil else { throw corrupt("a bad key") }
            let seq = rows.int64(1)
            guard seq >= 1, UInt64(seq) <= subject.seq else { throw corrupt("key '\(key)' with seq \(seq)") }
            let bytes = rows.bytes(2)
            guard let value = bytes.withUnsafeBytes({ try? RawJSON(validating: $0, maxDepth: .max) }) else {
                throw corrupt("key '\(key)''s value is not JSON")
            }
            keys.append((key, UInt64(seq), value, rows.int64(3)))
        }
        guard keys.count <= subject.capacity ?? 0 else {
            throw corrupt("\(keys.count) keys kept, more than its max_keys \(subject.capacity ?? 0)")
        }
        return keys
    }

    /// Applies a map's change: a key's write replaces the row of its previous one, a removal
    /// deletes it.
    func applyKeyed(_ change: JournalChange, in database: SQLiteDatabase) throws(SQLiteError) {
        switch change {
        case .write(let id, let key, let seq, let value, let time):
            let insert = try database.statement(
                "INSERT OR REPLACE INTO keyvals (subject, key, seq, value, ts) VALUES (?, ?, ?, ?, ?)")
            insert.bind(1, id)
            insert.bind(2, key)
            insert.bind(3, Int64(seq))
            insert.bind(4, bytes: value.bytes)
            insert.bind(5, time)
            try insert.run()
        case .remove(let id, let key, _):
            let delete = try database.statement("DELETE FROM keyvals WHERE subject = ? AND key = ?")
            delete.bind(1, id)
            delete.bind(2, key)
            try delete.run()
        case .create, .publish, .terminate, .delete:
            preconditionFailure("not a map's change")
        }
    }
}
