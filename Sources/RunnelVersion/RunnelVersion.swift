/// The version this build was made from, which `runneld --version` and `runnel --version`
/// print: a release tag, the tag and the commits since it, or the commit (`git describe`), or
/// `$RUNNEL_VERSION` where the build had no git (the StampVersion plugin).
///
/// Thread rules: a constant, any thread. Lifetime rule: none.
public enum RunnelVersion {
    public static let text = stampedVersion
}
