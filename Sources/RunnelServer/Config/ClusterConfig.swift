import Glibc
import TOMLKit

/// The cluster keys of `runneld.toml` (docs/protocol.md, "Clusters"): which NATS system the
/// node shares its subjects through, under which cluster name, as which node. Every key needs
/// a restart. Standalone when `nats` is empty.
///
/// Thread rules: an immutable `Sendable` value, part of `ServerConfig`.
public struct ClusterConfig: Sendable, Equatable {
    /// NATS URLs (`cluster_nats`, a string or a list; default none: standalone).
    public var nats: [String] = []
    /// The cluster's name (`cluster_name`, default `runnel`): nodes of one name share subjects.
    public var name = "runnel"
    /// This node's name in `stats`, logs and metrics (`node_name`; default, and `""`, the host
    /// name).
    public var nodeName = ClusterConfig.hostName
    /// JetStream replicas of the cluster's retained values (`cluster_replicas`, default 1).
    public var replicas = 1
    /// Credentials for NATS (`cluster_token`, `cluster_user`, `cluster_password`; "" for none).
    public var token = ""
    public var user = ""
    public var password = ""
    /// How long a starting node waits for NATS before it exits (`cluster_connect_timeout`, 10 s).
    public var connectTimeout: Duration = .seconds(10)
    /// The bytes of plain values handed to the link's NATS connection and not yet taken by it
    /// (`cluster_send_buffer_bytes`, 8 MiB): past it a value is not sent, and the nodes that
    /// wanted it tell their subscribers `dropped` (`ClusterSendQueue`).
    public var sendBufferBytes = 8 << 20

    public init() {}

    /// Whether the node is part of a cluster.
    public var isClustered: Bool { !nats.isEmpty }

    /// The longest cluster name, in bytes.
    static let maxNameBytes = 32
    /// The longest node name, in bytes.
    static let maxNodeNameBytes = 64

    /// Why `name` cannot be a cluster name (1 to 32 bytes of `[A-Za-z0-9_-]`: it is a token of
    /// every NATS subject the cluster uses), or nil.
    static func problem(withName name: String) -> String? {
        guard (1...maxNameBytes).contains(name.utf8.count) else { return "must be 1 to \(maxNameBytes) bytes" }
        guard name.utf8.allSatisfy(isNameByte) else { return "may hold only A-Z, a-z, 0-9, '_' and '-'" }
        return nil
    }

    /// Why `name` cannot be a node name (1 to 64 bytes of `[A-Za-z0-9_.-]`, what host names
    /// are made of), or nil.
    static func problem(withNodeName name: String) -> String? {
        guard (1...maxNodeNameBytes).contains(name.utf8.count) else {
            return "must be 1 to \(maxNodeNameBytes) bytes"
        }
        guard name.utf8.allSatisfy({ isNameByte($0) || $0 == UInt8(ascii: ".") }) else {
            return "may hold only A-Z, a-z, 0-9, '_', '-' and '.'"
        }
        return nil
    }

    /// Why `url` is not a NATS URL runneld takes (`nats://HOST:PORT` or `tls://HOST:PORT`,
    /// optionally with `USER:PASSWORD@`), or nil.
    static func problem(withURL url: String) -> String? {
        let schemes = ["nats://", "tls://"]
        guard let scheme = schemes.first(where: url.hasPrefix) else { return "must start with nats:// or tls://" }
        let rest = url.dropFirst(scheme.count)
        guard !rest.isEmpty, !rest.utf8.contains(where: { $0 <= 0x20 || $0 == UInt8(ascii: ",") || $0 == 0x7F })
        else {
            return "must name a host (no spaces or commas)"
        }
        return nil
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"):
            return true
        default: return false
        }
    }

    /// The host name, as a node name: its bytes outside a node name's become `-`, cut to 64.
    static var hostName: String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "runneld" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let cleaned = String(
            decoding: name.utf8.prefix(maxNodeNameBytes).map {
                isNameByte($0) || $0 == UInt8(ascii: ".") ? $0 : UInt8(ascii: "-")
            }, as: UTF8.self)
        return cleaned.isEmpty ? "runneld" : cleaned
    }
}

extension TOMLConfigReader {
    /// Reads one of the cluster keys.
    func applyCluster(_ key: ConfigKey, _ value: any TOMLValueConvertible, to config: inout ServerConfig)
        throws(ConfigError)
    {
        switch key {
        case .clusterNATS:
            let urls: [String]
            if let text = value.string {
                urls = text.isEmpty ? [] : [text]
            } else if value.type == .array, let array = value.array {
                urls = array.compactMap(\.string)
                guard urls.count == array.count else {
                    throw error(key.rawValue, "must be a NATS URL or a list of them, got \(Self.describe(value))")
                }
            } else {
                throw error(key.rawValue, "must be a NATS URL or a list of them, got \(Self.describe(value))")
            }
            for url in urls {
                if let problem = ClusterConfig.problem(withURL: url) {
                    throw error(key.rawValue, "\(TOMLConfigReader.quote(url)) \(problem)")
                }
            }
            config.cluster.nats = urls
        case .clusterName:
            let name = try text(key, value)
            if let problem = ClusterConfig.problem(withName: name) { throw error(key.rawValue, problem) }
            config.cluster.name = name
        case .nodeName:
            let given = try text(key, value)
            let name = given.isEmpty ? ClusterConfig.hostName : given
            if let problem = ClusterConfig.problem(withNodeName: name) { throw error(key.rawValue, problem) }
            config.cluster.nodeName = name
        case .clusterReplicas: config.cluster.replicas = try integer(key, value)
        case .clusterToken: config.cluster.token = try text(key, value)
        case .clusterUser: config.cluster.user = try text(key, value)
        case .clusterPassword: config.cluster.password = try text(key, value)
        case .clusterConnectTimeout:
            let timeout = try duration(key, value)
            guard timeout > .zero else { throw error(key.rawValue, "must be more than 0 seconds") }
            config.cluster.connectTimeout = timeout
        case .clusterSendBufferBytes: config.cluster.sendBufferBytes = try integer(key, value)
        default:
            preconditionFailure("\(key) is not a cluster key")
        }
    }

    private func text(_ key: ConfigKey, _ value: any TOMLValueConvertible) throws(ConfigError) -> String {
        guard let text = value.string, !text.utf8.contains(0) else {
            throw error(key.rawValue, "must be a string, got \(Self.describe(value))")
        }
        return text
    }
}

extension ServerConfig {
    /// A cluster key's value as `renderedValue(of:)` writes it (credentials hidden).
    func renderedClusterValue(of key: ConfigKey) -> String {
        switch key {
        case .clusterNATS:
            return cluster.nats.isEmpty
                ? "\"\" (standalone)" : "[\(cluster.nats.map(TOMLConfigReader.quote).joined(separator: ", "))]"
        case .clusterName: return TOMLConfigReader.quote(cluster.name)
        case .nodeName: return TOMLConfigReader.quote(cluster.nodeName)
        case .clusterReplicas: return String(cluster.replicas)
        case .clusterToken: return cluster.token.isEmpty ? "\"\"" : "(hidden)"
        case .clusterUser: return TOMLConfigReader.quote(cluster.user)
        case .clusterPassword: return cluster.password.isEmpty ? "\"\"" : "(hidden)"
        case .clusterConnectTimeout: return Self.renderSeconds(cluster.connectTimeout)
        case .clusterSendBufferBytes: return String(cluster.sendBufferBytes)
        default: preconditionFailure("\(key) is not a cluster key")
        }
    }
}
