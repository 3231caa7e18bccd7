import CNats

/// A message of a JetStream stream, copied off cnats's message on its delivery thread: its
/// subject, payload, its sequence in the stream, how many more the consumer has to deliver
/// now, and the KV operation it carries (`KV-Operation`: `DEL` or `PURGE` for a key's deletion).
struct NATSStreamMessage: Sendable {
    let subject: String
    let payload: [UInt8]
    let streamSeq: UInt64
    /// When JetStream stored it, in Unix milliseconds: the same on every node.
    let time: Int64
    let pending: UInt64
    let operation: String?
}

/// JetStream's answer to an asynchronous publish.
enum NATSPublishAnswer: Sendable, Equatable {
    /// Stored, as the stream's `seq`.
    case stored(seq: UInt64)
    /// Not stored: the subject's last value in the stream is not the one the publish expected
    /// (`Nats-Expected-Last-Subject-Sequence`).
    case notLast
    /// No answer within the publish's wait: it may or may not have been stored.
    case timedOut
    /// Not stored, or not answered, for this reason.
    case failed(String)
}

/// What a `NATSJetStream` tells its owner, on cnats's threads.
struct NATSJetStreamHandlers: Sendable {
    /// A message of one of the ordered consumers.
    var message: @Sendable (NATSStreamMessage) -> Void
    /// JetStream answered the asynchronous publish `id` (`Nats-Msg-Id`).
    var published: @Sendable (_ id: String, _ answer: NATSPublishAnswer) -> Void
}

/// The JetStream calls a cluster node makes, through cnats's `jsCtx` and `kvStore`.
///
/// Which calls block: stream and bucket administration, key-value writes and starting a
/// consumer are requests to the server that wait for its answer (up to `wait`), so they run
/// on the cluster's worker thread (or at start, before the loop runs), never on a loop;
/// `publish` does not wait for JetStream's answer (it comes to `published` on cnats's thread),
/// only for the socket as any publish of its connection may (`NATSConnection`: the retained
/// publisher's connection writes every publish at once, on its own queue), and, while
/// `maxPending` publishes are unanswered, for at most a millisecond before it fails.
///
/// Thread rules: any thread (cnats locks its context). Lifetime rule: lives as long as its
/// connection; holds the handlers until the process ends.
final class NATSJetStream: @unchecked Sendable {
    private let context: OpaquePointer
    private let handlers: Unmanaged<Box>

    private final class Box {
        let handlers: NATSJetStreamHandlers
        init(_ handlers: NATSJetStreamHandlers) { self.handlers = handlers }
    }

    /// Unanswered asynchronous publishes at most, before `publish` fails.
    static let maxPending: Int64 = 65_536

    init(connection: OpaquePointer, wait: Duration, handlers: NATSJetStreamHandlers) throws(NATSError) {
        let box = Unmanaged.passRetained(Box(handlers))
        var options = jsOptions()
        jsOptions_Init(&options)
        options.Wait = wait.cnatsMilliseconds
        options.PublishAsync.MaxPending = Self.maxPending
        options.PublishAsync.StallWait = 1
        options.PublishAsync.AckHandlerClosure = box.toOpaque()
        options.PublishAsync.AckHandler = { _, message, ack, failure, closure in
            defer { natsMsg_Destroy(message) }
            let box = Unmanaged<Box>.fromOpaque(closure!).takeUnretainedValue()
            var id: UnsafePointer<CChar>?
            guard natsMsgHeader_Get(message, "Nats-Msg-Id", &id) == NATS_OK, let id else { return }
            let answer: NATSPublishAnswer =
                if let ack {
                    .stored(seq: ack.pointee.Sequence)
                } else if let failure, failure.pointee.ErrCode == JSStreamWrongLastSequenceErr {
                    .notLast
                } else if let failure, failure.pointee.Err == NATS_TIMEOUT {
                    .timedOut
                } else if let failure {
                    .failed(
                        failure.pointee.ErrText.map { String(cString: $0) }
                            ?? String(cString: natsStatus_GetText(failure.pointee.Err)))
                } else {
                    .failed("no answer")
                }
            box.handlers.published(String(cString: id), answer)
        }
        var context: OpaquePointer?
        do throws(NATSError) {
            try NATSError.check(natsConnection_JetStream(&context, connection, &options), "opening JetStream")
        } catch {
            box.release()
            throw error
        }
        self.context = context!
        self.handlers = box
    }

    /// Makes the stream `name` holding `subject`, keeping `perSubject` values of it for at most
    /// `maxAgeMilliseconds` (none: no limit), in files or in memory, with `replicas`; nothing
    /// when it exists as asked. Blocks.
    func addStream(
        _ name: String, subject: String, perSubject: Int, maxAgeMilliseconds: Int64?, file: Bool, replicas: Int
    ) throws(NATSError) {
        var config = jsStreamConfig()
        jsStreamConfig_Init(&config)
        var errorCode = jsErrCode(0)
        let status = name.withCString { cName in
            subject.withCString { cSubject in
                var subjects: [UnsafePointer<CChar>?] = [cSubject]
                return subjects.withUnsafeMutableBufferPointer { list in
                    config.Name = cName
                    config.Subjects = list.baseAddress
                    config.SubjectsLen = 1
                    config.MaxMsgsPerSubject = Int64(perSubject)
                    config.Storage = file ? js_FileStorage : js_MemoryStorage
                    config.Replicas = Int64(replicas)
                    config.Discard = js_DiscardOld
                    if let maxAgeMilliseconds {
                        config.MaxAge = maxAgeMilliseconds * 1_000_000
                        // JetStream refuses a duplicate window longer than the age (its own is 2 min).
                        config.Duplicates = min(config.MaxAge, Self.duplicateWindowNanoseconds)
                    }
                    var info: UnsafeMutablePointer<jsStreamInfo>?
                    let status = js_AddStream(&info, context, &config, nil, &errorCode)
                    if info != nil { jsStreamInfo_Destroy(info) }
                    return status
                }
            }
        }
        try NATSError.check(status, "making stream \(name) (JetStream error \(errorCode.rawValue))")
    }

    /// JetStream's default duplicate window, 2 minutes.
    static let duplicateWindowNanoseconds: Int64 = 120 * 1_000_000_000

    /// How long a publish into a stream whose values live `maxAgeMilliseconds` (none: no
    /// limit) may be sent again and still be stored once: within its duplicate window, less a
    /// margin for the clocks.
    static func resendWindow(maxAgeMilliseconds: Int64?) -> Duration {
        let window = min(
            maxAgeMilliseconds.map { $0 * 1_000_000 } ?? duplicateWindowNanoseconds, duplicateWindowNanoseconds)
        return .nanoseconds(window) * 0.9
    }

    /// The sequence number of the last value in the stream `name` (0 when it has had none);
    /// nil when there is no such stream. Blocks.
    func lastSequence(of name: String) throws(NATSError) -> UInt64? {
        var info: UnsafeMutablePointer<jsStreamInfo>?
        var errorCode = jsErrCode(0)
        let status = js_GetStreamInfo(&info, context, name, nil, &errorCode)
        if errorCode == JSStreamNotFoundErr { return nil }
        try NATSError.check(status, "reading stream \(name) (JetStream error \(errorCode.rawValue))")
        defer { jsStreamInfo_Destroy(info) }
        return info!.pointee.State.LastSeq
    }

    /// Deletes the stream `name`; nothing when there is none. Blocks.
    func deleteStream(_ name: String) throws(NATSError) {
        var errorCode = jsErrCode(0)
        let status = js_DeleteStream(context, name, nil, &errorCode)
        guard status == NATS_OK || errorCode == JSStreamNotFoundErr else {
            throw NATSError(doing: "deleting stream \(name)", status: status)
        }
    }

    /// Publishes `payload` on `subject` without waiting: JetStream's answer goes to the
    /// handlers' `published` with `id`, which is also the value's `Nats-Msg-Id` (a resend
    /// within the stream's duplicate window is stored once). With `expectingLast`, stored only
    /// if the subject's last value in the stream has that seq (else the answer is `notLast`).
    /// Unanswered after `wait`, the answer is `timedOut`.
    func publish(
        _ subject: String, payload: UnsafeRawBufferPointer, id: String, expectingLast: UInt64? = nil, wait: Duration
    ) throws(NATSError) {
        var options = jsPubOptions()
        jsPubOptions_Init(&options)
        options.MaxWait = wait.cnatsMilliseconds
        if let expectingLast { options.ExpectLastSubjectSeq = expectingLast }
        let status = id.withCString { cID in
            options.MsgId = cID
            return js_PublishAsync(
                context, subject, payload.baseAddress, Int32(payload.count), &options)
        }
        try NATSError.check(status, "publishing on \(subject)")
    }

    /// Starts an ordered consumer of `stream` (`subject` may be a wildcard), from its first
    /// value or from the last value of each subject: its messages go to the handlers'
    /// `message`. cnats makes it anew, from where it was, after a gap or a reconnect. Blocks.
    func consume(_ stream: String, subject: String, lastPerSubject: Bool) throws(NATSError) -> NATSSubscription {
        var options = jsSubOptions()
        jsSubOptions_Init(&options)
        options.Ordered = true
        options.Config.DeliverPolicy = lastPerSubject ? js_DeliverLastPerSubject : js_DeliverAll
        var subscription: OpaquePointer?
        var errorCode = jsErrCode(0)
        let status = stream.withCString { cStream in
            options.Stream = cStream
            return js_Subscribe(
                &subscription, context, subject,
                { _, _, message, closure in NATSJetStream.deliver(message, closure) },
                handlers.toOpaque(), nil, &options, &errorCode)
        }
        try NATSError.check(status, "consuming stream \(stream) (JetStream error \(errorCode.rawValue))")
        return NATSSubscription(adopting: subscription!)
    }

    private static func deliver(_ message: OpaquePointer?, _ closure: UnsafeMutableRawPointer?) {
        defer { natsMsg_Destroy(message) }
        let box = Unmanaged<Box>.fromOpaque(closure!).takeUnretainedValue()
        var meta: UnsafeMutablePointer<jsMsgMetaData>?
        guard natsMsg_GetMetaData(&meta, message) == NATS_OK, let meta else { return }
        defer { jsMsgMetaData_Destroy(meta) }
        let count = Int(natsMsg_GetDataLength(message))
        let payload: [UInt8] =
            if count > 0, let data = natsMsg_GetData(message) {
                [UInt8](UnsafeRawBufferPointer(start: data, count: count))
            } else {
                []
            }
        var operation: UnsafePointer<CChar>?
        let hasOperation = natsMsgHeader_Get(message, "KV-Operation", &operation) == NATS_OK
        box.handlers.message(
            NATSStreamMessage(
                subject: String(cString: natsMsg_GetSubject(message)), payload: payload,
                streamSeq: meta.pointee.Sequence.Stream, time: meta.pointee.Timestamp / 1_000_000,
                pending: meta.pointee.NumPending,
                operation: hasOperation ? operation.map { String(cString: $0) } : nil))
    }

    // MARK: Key-value

    /// The key-value bucket `name` (made when missing), keeping one revision of each key, in
    /// files, with `replicas`. Blocks.
    func keyValue(_ name: String, replicas: Int) throws(NATSError) -> NATSKeyValue {
        var config = kvConfig()
        kvConfig_Init(&config)
        config.History = 1
        config.StorageType = js_FileStorage
        config.Replicas = Int32(replicas)
        var store: OpaquePointer?
        let status = name.withCString { cName in
            config.Bucket = cName
            return js_CreateKeyValue(&store, context, &config)
        }
        try NATSError.check(status, "opening key-value bucket \(name)")
        return NATSKeyValue(store!)
    }
}

/// A key-value bucket. Every call blocks (a request to the server): the worker thread's, or
/// start-up's before the loop runs (`ClusterDefinitionSync.loadDefinitions`).
/// Thread rules: any thread. Lifetime rule: as long as its JetStream context.
struct NATSKeyValue: @unchecked Sendable {
    private let store: OpaquePointer

    fileprivate init(_ store: OpaquePointer) { self.store = store }

    /// Writes `value` under `key` only if the key has none: false when it has one.
    func create(_ key: String, _ value: [UInt8]) throws(NATSError) -> Bool {
        var revision: UInt64 = 0
        let status = value.withUnsafeBytes { kvStore_Create(&revision, store, key, $0.baseAddress, Int32($0.count)) }
        if status == NATS_OK { return true }
        // A key that exists makes cnats's "wrong last sequence" error.
        if status == NATS_ERR { return false }
        throw NATSError(doing: "creating key \(key)", status: status)
    }

    /// Writes `value` under `key` only if the key's last revision is `last`: false when it is not.
    func update(_ key: String, _ value: [UInt8], last: UInt64) throws(NATSError) -> Bool {
        var revision: UInt64 = 0
        let status = value.withUnsafeBytes {
            kvStore_Update(&revision, store, key, $0.baseAddress, Int32($0.count), last)
        }
        if status == NATS_OK { return true }
        if status == NATS_ERR { return false }
        throw NATSError(doing: "updating key \(key)", status: status)
    }

    func put(_ key: String, _ value: [UInt8]) throws(NATSError) {
        var revision: UInt64 = 0
        let status = value.withUnsafeBytes { kvStore_Put(&revision, store, key, $0.baseAddress, Int32($0.count)) }
        try NATSError.check(status, "writing key \(key)")
    }

    func delete(_ key: String) throws(NATSError) {
        try NATSError.check(kvStore_Delete(store, key), "deleting key \(key)")
    }

    /// Every key that has a value. Blocks.
    func keys() throws(NATSError) -> [String] {
        var list = kvKeysList()
        let status = kvStore_Keys(&list, store, nil)
        if status == NATS_NOT_FOUND { return [] }
        try NATSError.check(status, "listing the bucket's keys")
        defer { kvKeysList_Destroy(&list) }
        return (0..<Int(list.Count)).compactMap { list.Keys[$0].map { String(cString: $0) } }
    }

    /// The value under `key`, nil when it has none (or was deleted).
    func get(_ key: String) throws(NATSError) -> [UInt8]? {
        var entry: OpaquePointer?
        let status = kvStore_Get(&entry, store, key)
        if status == NATS_NOT_FOUND { return nil }
        try NATSError.check(status, "reading key \(key)")
        defer { kvEntry_Destroy(entry) }
        let count = Int(kvEntry_ValueLen(entry))
        guard count > 0, let bytes = kvEntry_Value(entry) else { return [] }
        return [UInt8](UnsafeRawBufferPointer(start: bytes, count: count))
    }
}
