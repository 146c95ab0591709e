#include "kubeapi/kube_config.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "common/error.h"
#include "support/scoped_env.h"

namespace accel::kubeapi {
namespace kube_config_test {

namespace fs = std::filesystem;
using test_support::ScopedEnv;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/accel-kubeconfig-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }
  std::string Write(const std::string& name, const std::string& text) const {
    const fs::path p = fs::path(path_ + "/" + name).lexically_normal();
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }

 private:
  std::string path_;
};

// The InputError ParseKubeconfig throws for `text`, or a failure.
InputError KubeconfigError(const std::string& text) {
  try {
    ParseKubeconfig(text, "kc.yaml", "/base");
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for:\n" << text;
  return InputError("", "", "");
}

std::string Kubeconfig(const std::string& cluster, const std::string& user) {
  return "apiVersion: v1\nkind: Config\ncurrent-context: ctx\n"
         "contexts:\n- name: other\n  context: {cluster: nowhere, user: nobody}\n"
         "- name: ctx\n  context:\n    cluster: c1\n    user: u1\n    namespace: team-a\n"
         "clusters:\n- name: c1\n  cluster:\n" +
         cluster + "users:\n- name: u1\n  user:\n" + user;
}

TEST(KubeconfigTest, TokenAndCaFileResolveRelativePaths) {
  const KubeConfig c = ParseKubeconfig(
      Kubeconfig("    server: https://10.0.0.1:6443/\n    certificate-authority: pki/ca.crt\n",
                 "    token: abc.def\n"),
      "/home/u/.kube/config", "/home/u/.kube");
  EXPECT_EQ(c.server, "https://10.0.0.1:6443");
  EXPECT_EQ(c.ca_file, "/home/u/.kube/pki/ca.crt");
  EXPECT_EQ(c.token, "abc.def");
  EXPECT_EQ(c.default_namespace, "team-a");
  EXPECT_EQ(c.source, "/home/u/.kube/config");
  EXPECT_NE(c.identity.find("user 'u1'"), std::string::npos) << c.identity;
  EXPECT_FALSE(c.insecure);
}

TEST(KubeconfigTest, TokenFileClientCertificateDataAndInsecure) {
  // base64("PEM-CERT") and base64("PEM-KEY").
  const KubeConfig c = ParseKubeconfig(
      Kubeconfig("    server: https://[fd00::1]:6443\n    insecure-skip-tls-verify: true\n",
                 "    tokenFile: ../tok\n    client-certificate-data: UEVNLUNFUlQ=\n"
                 "    client-key-data: UEVNLUtFWQ==\n"),
      "kc", "/etc/kube/sub");
  EXPECT_EQ(c.server, "https://[fd00::1]:6443");
  EXPECT_TRUE(c.insecure);
  EXPECT_EQ(c.token_file, "/etc/kube/tok");
  EXPECT_EQ(c.client_cert_pem, "PEM-CERT");
  EXPECT_EQ(c.client_key_pem, "PEM-KEY");
}

TEST(KubeconfigTest, ClientCertificateFilesAndCaData) {
  const KubeConfig c = ParseKubeconfig(
      Kubeconfig("    server: https://api.example:443\n    certificate-authority-data: Q0E=\n",
                 "    client-certificate: /abs/client.crt\n    client-key: client.key\n"),
      "kc", "/dir");
  EXPECT_EQ(c.ca_pem, "CA");
  EXPECT_EQ(c.client_cert_file, "/abs/client.crt");
  EXPECT_EQ(c.client_key_file, "/dir/client.key");
}

TEST(KubeconfigTest, ExplicitContextAndPlainHttp) {
  const std::string text =
      "current-context: a\ncontexts:\n- name: a\n  context: {cluster: ca, user: ua}\n"
      "- name: b\n  context: {cluster: cb}\nclusters:\n- name: ca\n  cluster: {server: https://a:1}\n"
      "- name: cb\n  cluster: {server: 'http://127.0.0.1:8080'}\nusers:\n- name: ua\n  user: {token: t}\n";
  const KubeConfig c = ParseKubeconfig(text, "kc", "", "b");
  EXPECT_EQ(c.server, "http://127.0.0.1:8080");
  EXPECT_EQ(c.token, "");
  EXPECT_EQ(c.default_namespace, "default");
}

TEST(KubeconfigTest, UnsupportedAuthSaysWhatIsSupported) {
  const InputError e = KubeconfigError(Kubeconfig(
      "    server: https://a:1\n", "    exec:\n      command: aws\n      apiVersion: client.authentication.k8s.io/v1\n"));
  EXPECT_EQ(e.where(), "kc.yaml");
  EXPECT_EQ(e.field(), "users[u1].user.exec");
  EXPECT_NE(std::string(e.what()).find("not supported"), std::string::npos);
  EXPECT_NE(e.hint().find("tokenFile"), std::string::npos);
  EXPECT_EQ(KubeconfigError(Kubeconfig("    server: https://a:1\n", "    auth-provider: {name: oidc}\n")).field(),
            "users[u1].user.auth-provider");
  EXPECT_EQ(KubeconfigError(Kubeconfig("    server: https://a:1\n", "    username: admin\n")).field(),
            "users[u1].user.username");
}

TEST(KubeconfigTest, MissingOrMalformedPiecesNameTheKeyPath) {
  EXPECT_EQ(KubeconfigError("clusters: []\n").field(), "current-context");
  EXPECT_EQ(KubeconfigError("current-context: x\ncontexts: []\n").field(), "contexts");
  EXPECT_EQ(KubeconfigError(Kubeconfig("    certificate-authority: ca\n", "    token: t\n")).field(),
            "clusters[c1].cluster.server");
  EXPECT_EQ(KubeconfigError(Kubeconfig("    server: ftp://a\n", "    token: t\n")).field(),
            "clusters[c1].cluster.server");
  EXPECT_EQ(KubeconfigError(Kubeconfig("    server: https://\n", "    token: t\n")).field(),
            "clusters[c1].cluster.server");
  EXPECT_EQ(KubeconfigError(Kubeconfig("    server: https://a:1\n    certificate-authority-data: '***'\n", "    token: t\n"))
                .field(),
            "clusters[c1].cluster.certificate-authority-data");
  EXPECT_EQ(KubeconfigError(Kubeconfig("    server: https://a:1\n    insecure-skip-tls-verify: maybe\n", "    token: t\n"))
                .field(),
            "clusters[c1].cluster.insecure-skip-tls-verify");
  EXPECT_EQ(KubeconfigError(Kubeconfig("    server: https://a:1\n", "    client-certificate: c.crt\n")).field(),
            "users[u1].user.client-key");
  EXPECT_EQ(KubeconfigError(Kubeconfig("    server: [a, b]\n", "    token: t\n")).field(),
            "clusters[c1].cluster.server");
  const InputError unknown_cluster = KubeconfigError(
      "current-context: c\ncontexts:\n- name: c\n  context: {cluster: gone, user: u}\n"
      "clusters:\n- name: here\n  cluster: {server: https://a:1}\n");
  EXPECT_EQ(unknown_cluster.field(), "clusters");
  EXPECT_NE(unknown_cluster.hint().find("here"), std::string::npos);
  EXPECT_EQ(KubeconfigError("current-context: [\n").where().rfind("kc.yaml", 0), 0u);  // not YAML
  EXPECT_EQ(KubeconfigError("- a list\n").where(), "kc.yaml");
  EXPECT_THROW(ParseKubeconfig(Kubeconfig("    server: https://a:1\n", "    token: t\n"), "kc", "", "nope"), InputError);
}

TEST(KubeconfigTest, LoadReadsTheFileAndResolvesAgainstItsDirectory) {
  TempDir dir;
  const std::string path = dir.Write("kube/config", Kubeconfig("    server: https://a:1\n", "    tokenFile: token\n"));
  EXPECT_EQ(LoadKubeconfig(path).token_file, dir.path() + "/kube/token");
  try {
    LoadKubeconfig(dir.path() + "/missing");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), dir.path() + "/missing");
  }
}

// A JWT whose payload is {"sub":"system:serviceaccount:accel-system:accel-dra"} (not signed: only
// the subject is read, for error messages).
const char* kServiceAccountJwt =
    "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6YWNjZWwtc3lzdGVtOmFjY2VsLWRyYSJ9.c2ln";

TEST(InClusterConfigTest, ReadsTheServiceAccountAndEnvironment) {
  TempDir root;
  const std::string sa = "/var/run/secrets/kubernetes.io/serviceaccount/";
  root.Write(sa + "token", std::string(kServiceAccountJwt) + "\n");
  root.Write(sa + "ca.crt", "CA");
  root.Write(sa + "namespace", "accel-system");
  ScopedEnv host("KUBERNETES_SERVICE_HOST", "fd00::1");
  ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");
  const KubeConfig c = InClusterConfig(root.path());
  EXPECT_EQ(c.server, "https://[fd00::1]:443");
  EXPECT_EQ(c.token_file, root.path() + sa + "token");
  EXPECT_EQ(c.ca_file, root.path() + sa + "ca.crt");
  EXPECT_EQ(c.default_namespace, "accel-system");
  EXPECT_EQ(c.identity, "service account accel-system/accel-dra");
  EXPECT_EQ(c.source, "in-cluster config");

  ScopedEnv v4("KUBERNETES_SERVICE_HOST", "10.96.0.1");
  EXPECT_EQ(InClusterConfig(root.path()).server, "https://10.96.0.1:443");
  root.Write(sa + "token", "opaque-token");
  EXPECT_NE(InClusterConfig(root.path()).identity.find(sa + "token"), std::string::npos);
}

TEST(InClusterConfigTest, OutsideAPodTheErrorSaysSo) {
  TempDir root;
  {
    ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");
    ::unsetenv("KUBERNETES_SERVICE_HOST");
    try {
      InClusterConfig(root.path());
      FAIL();
    } catch (const InputError& e) {
      EXPECT_EQ(e.field(), "KUBERNETES_SERVICE_HOST");
      EXPECT_NE(e.hint().find("--kubeconfig"), std::string::npos);
    }
  }
  ScopedEnv host("KUBERNETES_SERVICE_HOST", "10.96.0.1");
  ScopedEnv port("KUBERNETES_SERVICE_PORT", "https");
  EXPECT_THROW(InClusterConfig(root.path()), InputError);
  ScopedEnv good_port("KUBERNETES_SERVICE_PORT", "443");
  try {
    InClusterConfig(root.path());  // no token file
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(e.where().find("serviceaccount/token"), std::string::npos);
  }
}

}  // namespace
}  // namespace accel::kubeapi

namespace accel::kubeapi {
namespace kube_config_test {

// The fuzz corpus and deterministic mutations of it: only InputError may escape.
TEST(KubeconfigTest, CorpusAndMutationsOnlyThrowInputError) {
  std::vector<std::string> seeds;
  for (const auto& entry : fs::directory_iterator(std::string(ACCEL_SOURCE_DIR) + "/fuzz/corpus/kubeconfig")) {
    std::ifstream in(entry.path(), std::ios::binary);
    seeds.emplace_back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  ASSERT_FALSE(seeds.empty());
  uint32_t state = 12345;
  const auto next = [&state] {
    state = state * 1664525u + 1013904223u;
    return state >> 8;
  };
  const std::string alphabet = ":-[]{}\n \"'#&*!|>%@`,?=/.\\0aZ9";
  for (int i = 0; i < 3000; ++i) {
    std::string text = seeds[next() % seeds.size()];
    for (int edits = 1 + static_cast<int>(next() % 4); edits > 0 && !text.empty(); --edits) {
      const size_t at = next() % text.size();
      switch (next() % 3) {
        case 0: text[at] = alphabet[next() % alphabet.size()]; break;
        case 1: text.erase(at, 1 + next() % 8); break;
        default: text.insert(at, 1, alphabet[next() % alphabet.size()]); break;
      }
    }
    try {
      ParseKubeconfig(text, "kc", "/base");
      ParseKubeconfig(text, "kc", "/base", "other");
    } catch (const InputError&) {
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not an InputError: " << e.what() << "\n" << text;
    }
  }
}

}  // namespace
}  // namespace accel::kubeapi
