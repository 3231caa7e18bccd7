import RunnelJSON
import RunnelProtocol

/// Values one HTTP `POST /pub/SUBJECT` publishes together (what one read of its body held),
/// or its `DELETE /pub/SUBJECT?key=K`: carried out on the loop that owns the subjects, here or
/// forwarded to it (decision 0011), by one rule (`Server.publish(_:by:then:)`), so a request
/// is answered alike on every loop. Values, made on the request's loop and read on the owner's.
package struct PublishedBatch: Sendable {
    package let subject: String
    /// The map key written (`?key=`); nil for a subject of another kind.
    package let key: String?
    /// The values, in order; none for a removal.
    package var values: [RawJSON]
    /// A `DELETE` of `key`.
    package let removesKey: Bool
    /// The rights of the request's token.
    package let grant: TokenGrant
    /// No batch follows: the receipt waits for the store where the request's answer does.
    package var isLast: Bool
    /// An earlier batch of the request published a value whose answer waits for the store.
    package var waits: Bool

    package init(
        subject: String, key: String?, values: [RawJSON], removesKey: Bool = false, grant: TokenGrant,
        isLast: Bool, waits: Bool
    ) {
        self.subject = subject
        self.key = key
        self.values = values
        self.removesKey = removesKey
        self.grant = grant
        self.isLast = isLast
        self.waits = waits
    }

    /// What became of a batch: how many of its values were published, in order, until the
    /// first that failed (`failure`) or until the publisher was paused (the rest are to be sent
    /// again once it resumes); at least one is published unless one failed.
    package struct Receipt: Sendable {
        package var published = 0
        /// The subscriptions the last value (or removal) reached, `pub`'s `receivers`.
        package var receivers = 0
        /// A value's answer waits for the store (a durable subject's, one the batch made).
        package var waits = false
        package var failure: ProtocolError?
    }
}

extension Server {
    /// Publishes `batch` as `publisher`, on this loop when it owns the subjects, else on the
    /// owner through its stand-in for `publisher` (a subscriber lagging there pauses it here),
    /// and hands `then` the receipt: at once on the owner unless it waits for the store, which
    /// a last batch published whole (or one that failed) does when the request published a
    /// value whose answer waits (`Publishing.Receipt.afterWrite`).
    package func publish(
        _ batch: PublishedBatch, by publisher: PublisherGate, then: @escaping (PublishedBatch.Receipt) -> Void
    ) {
        guard let replicas else { return publishOwned(batch, by: publisher, then: then) }
        replicas.publish(batch, publisher: replicas.number(of: publisher), then: then)
    }

    /// `publish` on the loop that owns the subjects.
    private func publishOwned(
        _ batch: PublishedBatch, by publisher: PublisherGate, then: @escaping (PublishedBatch.Receipt) -> Void
    ) {
        var receipt = PublishedBatch.Receipt()
        var entry: SubjectEntry?
        /// A value's receivers are counted once it is written (`Publishing.Receipt.afterWrite`).
        var countsAfterWrite = false
        do throws(ProtocolError) {
            if let key = batch.key {
                let map = try mapTarget(named: batch.subject, for: batch.grant)
                entry = map
                let changes: [RawJSON?] = batch.removesKey ? [nil] : batch.values
                for value in changes {
                    if receipt.published > 0 && publisher.isPaused { break }
                    let (receivers, waits) = try Publishing.change(
                        key, to: value, members: JSONMemberIndex(), of: map, in: subjects, counting: stats,
                        bounding: publishEvaluationBound, by: publisher)
                    receipt.receivers = receivers
                    receipt.waits = receipt.waits || waits
                    if value != nil { receipt.published += 1 }
                }
            } else {
                let (target, made) = try publishTarget(named: batch.subject, for: batch.grant)
                entry = target
                if target.map != nil { throw Publishing.keyNeeded(target) }
                for value in batch.values {
                    if receipt.published > 0 && publisher.isPaused { break }
                    switch try Publishing.publish(
                        value, members: JSONMemberIndex(), to: target, made: made && receipt.published == 0,
                        in: subjects, counting: stats, bounding: publishEvaluationBound, by: publisher)
                    {
                    case .now(let receivers):
                        receipt.receivers = receivers
                        countsAfterWrite = false
                    case .afterWrite:
                        receipt.waits = true
                        countsAfterWrite = true
                    }
                    receipt.published += 1
                }
            }
        } catch {
            receipt.failure = error
        }
        let isDone = receipt.failure != nil || (batch.isLast && receipt.published == batch.values.count)
        guard receipt.waits || batch.waits, isDone else { return then(receipt) }
        subjects.whenWritten { error in
            if let error, receipt.failure == nil {
                receipt.failure = error
            } else if countsAfterWrite, let entry {
                receipt.receivers = entry.subscriberCount
            }
            then(receipt)
        }
    }
}
