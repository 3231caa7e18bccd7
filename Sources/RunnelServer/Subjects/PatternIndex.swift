import RunnelExpression
import RunnelProtocol

/// Pattern subscriptions indexed by their tokens, so the subjects a new subject name must join
/// are found by walking the name's tokens, not by testing every pattern.
///
/// Publishing never consults it: a pattern subscription is subscribed to each matching subject
/// directly, so a publish costs the same with or without patterns. The index is used when a
/// subject is created (which live patterns join it) and kept in step as patterns come and go.
/// Loop thread only.
final class PatternIndex<Member: AnyObject> {
    private final class Node {
        var children: [Substring: Node] = [:]
        var star: Node?
        /// Members whose pattern ends here.
        var members: [ObjectIdentifier: Member] = [:]
        /// Members whose pattern ends with `>` here.
        var restMembers: [ObjectIdentifier: Member] = [:]

        var isEmpty: Bool {
            children.isEmpty && star == nil && members.isEmpty && restMembers.isEmpty
        }
    }

    private let root = Node()
    private(set) var count = 0

    /// Adds `member` under `pattern`.
    func insert(_ member: Member, for pattern: SubjectPattern) {
        var node = root
        for token in pattern.tokens {
            switch token {
            case .literal(let literal):
                if let next = node.children[literal] {
                    node = next
                } else {
                    let next = Node()
                    node.children[literal] = next
                    node = next
                }
            case .one:
                if node.star == nil { node.star = Node() }
                node = node.star!
            case .rest:
                node.restMembers[ObjectIdentifier(member)] = member
                count += 1
                return
            }
        }
        node.members[ObjectIdentifier(member)] = member
        count += 1
    }

    /// Removes `member` from under `pattern`, pruning empty branches.
    func remove(_ member: Member, for pattern: SubjectPattern) {
        if remove(ObjectIdentifier(member), tokens: pattern.tokens[...], from: root) { count -= 1 }
    }

    private func remove(_ id: ObjectIdentifier, tokens: ArraySlice<SubjectPattern.Token>, from node: Node) -> Bool {
        guard let token = tokens.first else { return node.members.removeValue(forKey: id) != nil }
        switch token {
        case .rest:
            return node.restMembers.removeValue(forKey: id) != nil
        case .one:
            guard let next = node.star else { return false }
            let removed = remove(id, tokens: tokens.dropFirst(), from: next)
            if next.isEmpty { node.star = nil }
            return removed
        case .literal(let literal):
            guard let next = node.children[literal] else { return false }
            let removed = remove(id, tokens: tokens.dropFirst(), from: next)
            if next.isEmpty { node.children[literal] = nil }
            return removed
        }
    }

    /// Every member whose pattern matches the subject `name`.
    func matches(_ name: String) -> [Member] {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        var found: [Member] = []
        collect(parts[...], at: root, into: &found)
        return found
    }

    private func collect(_ parts: ArraySlice<Substring>, at node: Node, into found: inout [Member]) {
        guard let part = parts.first else {
            found.append(contentsOf: node.members.values)
            return
        }
        // `>` here matches this token and everything after it.
        found.append(contentsOf: node.restMembers.values)
        if let next = node.children[part] { collect(parts.dropFirst(), at: next, into: &found) }
        if let star = node.star { collect(parts.dropFirst(), at: star, into: &found) }
    }
}
