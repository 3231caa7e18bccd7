import Runnel
import RunnelProtocol

/// The token's rights over what a session reads: at `sub` (its subject or pattern, and the
/// subjects its stages reach, at `sub` time and at run time), and again when a reload or a
/// second `auth` changes them (docs/protocol.md, "Permissions per token").
///
/// Nothing here runs per delivered value: a pattern subscription is filtered when it meets a
/// subject (`PatternWatcher`), a stage when it looks a subject up.
extension Session {
    /// Checks that the token may subscribe to `pattern`, a subject or a pattern (some subject
    /// it matches). For a pattern, the filter its subscription applies to each subject it
    /// meets: the session's grant at that time, since a reload may narrow rights that covered
    /// the whole pattern when it was subscribed. Nil for a subject.
    func subjectFilter(checking pattern: SubjectPattern) throws(ProtocolError) -> (@Sendable (String) -> Bool)? {
        guard let grant else { preconditionFailure("a sub handled before authentication") }
        // A subject's occupancy is read with the subject's rights (`SystemSubjects.rightsName`).
        guard pattern.isWildcard else {
            try grant.checkSubscribe(to: SystemSubjects.rightsName(of: pattern.text))
            return nil
        }
        let checked = SubjectPattern(SystemSubjects.rightsName(of: pattern.text))
        guard grant.subscribe.overlaps(checked) else {
            throw ProtocolError(.unauthorized, "token may not subscribe to any subject matching \(checked.text)")
        }
        return { [weak self] name in self?.grant?.subscribe.permits(SystemSubjects.rightsName(of: name)) ?? false }
    }

    /// How `subscription`'s stages find the subjects they name: only those the token may
    /// subscribe to (its grant at the time of the lookup), each recorded in
    /// `subscription.reached`. A refusal is `unauthorized`; at run time it ends the
    /// subscription with that code and the stage's index. On a loop that does not own the
    /// subjects, their replicas (`stageReplica`); `hold`, the watch of every subject a chain
    /// that looks them up at run time keeps (`holdEverySubject`), lives as long as the lookup.
    func stageLookup(for subscription: SessionSubscription, holding hold: ReplicaHold? = nil) -> SubjectLookup {
        { [weak self, weak subscription] name, late throws(ProtocolError) in
            _ = hold
            guard let self, let subscription, let grant = self.grant else {
                throw ProtocolError(.unauthorized, "the connection's token is no longer valid")
            }
            try grant.checkSubscribe(to: SystemSubjects.rightsName(of: name))
            if let replicas = context.replicas {
                return try stageReplica(name, for: subscription, in: replicas, late: late)
            }
            let entry = try context.subjectForUse(name, under: settings)
            noteReached(entry, by: subscription)
            // A map's values, as a stream: its removals are no values.
            return entry.map == nil ? entry.subject : entry.subject.filter { $0.mark == nil }
        }
    }

    /// Records that `subscription`'s stages read `entry` (whose rights a reload checks again).
    func noteReached(_ entry: SubjectEntry, by subscription: SessionSubscription) {
        guard subscription.reached.insert(entry.name).inserted else { return }
        if entry.kind == .subject { subscription.reachedPlain.insert(entry.name) }
        subscriptions.noteReached(entry.name, by: subscription)
    }

    /// The server's tokens were rebuilt: the session moves to its token's new grant (a JWT
    /// verified again). When the token is gone, or its JWT no longer verifies, the connection
    /// is closed with a `closing` line `unauthorized`; when its rights changed, `move(to:because:)`.
    func accessDidChange(to access: AccessList) {
        guard !isClosing else { return }
        guard let old = grant else {
            // Not authenticated yet: a server that no longer has tokens lets it in.
            grant = access.openGrant
            return
        }
        switch access.successor(of: old, at: ProcessStatistics.wallClockSeconds()) {
        case .success(let new): move(to: new, because: "permissions changed by a reload")
        case .failure(let reason): closeAsUnauthorized(reason.message)
        }
    }

    /// Moves the session to `new` (a reload's grant, or a second `auth`'s): later requests use
    /// its rights, and every subscription reading a subject they do not allow ends with an
    /// `error` event `unauthorized` saying `cause`.
    func move(to new: TokenGrant, because cause: String) {
        let old = grant
        grant = new
        guard let old, !new.hasSameRights(as: old) else { return }
        lastPublishTarget = nil
        for subscription in subscriptions.all {
            guard let name = forbiddenSubject(of: subscription, before: old, after: new) else { continue }
            // Ended as its own error event would end it.
            deliverTerminal(
                ProtocolError(.unauthorized, "token may no longer subscribe to \(name) (\(cause))"), to: subscription)
        }
    }

    /// A subject `subscription` reads that `after` forbids: its own, one its stages reached,
    /// or, for a pattern, a subject it was let into under `before`. Nil when it may go on.
    private func forbiddenSubject(of subscription: SessionSubscription, before: TokenGrant, after: TokenGrant)
        -> String?
    {
        let pattern = subscription.pattern
        if !pattern.isWildcard {
            if !after.subscribe.permits(pattern.text) { return pattern.text }
        } else if !after.subscribe.covers(pattern) {
            guard after.subscribe.overlaps(pattern) else { return pattern.text }
            // Subjects it joined under the old rights (those created later are filtered as they
            // come); on a loop that does not own them, their replicas, which it reads.
            let joined =
                context.replicas?.list(prefix: pattern.literalPrefix) ?? subjects.list(prefix: pattern.literalPrefix)
            for entry in joined
            where pattern.matches(entry.name) && before.subscribe.permits(entry.name)
                && !after.subscribe.permits(entry.name)
            {
                return entry.name
            }
        }
        return subscription.reached.first { !after.subscribe.permits($0) }
    }

    /// Ends the connection: one last `closing` line with code `unauthorized` and `reason`.
    private func closeAsUnauthorized(_ reason: String) {
        context.logger.notice(
            "closing connection: token no longer valid",
            metadata: [
                "connection": "\(id)", "peer": "\(transport.peerDescription)", "token": "\(grant?.source ?? "")",
                "reason": "\(reason)",
            ])
        close(saying: ProtocolError(.unauthorized, reason), flushingWithin: .seconds(2))
    }
}
