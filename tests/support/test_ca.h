// A certificate authority made at test time (OpenSSL, P-256 keys): its certificate, and server
// and client certificates it signs, as PEM text, for tests of TLS and mutual TLS.
#pragma once

#include <string>
#include <vector>

namespace mltune::testing {

struct PemPair {
  std::string cert, key;
};

class TestCa {
 public:
  explicit TestCa(const std::string& name = "mltune test CA");
  ~TestCa();
  TestCa(const TestCa&) = delete;
  TestCa& operator=(const TestCa&) = delete;

  const std::string& cert() const { return cert_; }
  // A leaf certificate for `common_name`; `hosts` become its subject alternative names (IP
  // addresses where they parse as one, else DNS names), as a server's must name its address.
  PemPair Issue(const std::string& common_name, const std::vector<std::string>& hosts = {}) const;

 private:
  void* key_ = nullptr;  // EVP_PKEY
  std::string cert_;
};

}  // namespace mltune::testing
