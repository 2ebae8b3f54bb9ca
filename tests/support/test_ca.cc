#include "tests/support/test_ca.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <stdexcept>

namespace mltune::testing {
namespace {

std::string Pem(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(size));
  BIO_free(bio);
  return out;
}

std::string KeyPem(EVP_PKEY* key) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  return Pem(bio);
}

std::string CertPem(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert);
  return Pem(bio);
}

void AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) throw std::runtime_error("bad X509 extension " + value);
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// An unsigned certificate for `key` named `common_name`, valid for a day, issued by `issuer` (or
// itself where null).
X509* MakeCert(EVP_PKEY* key, const std::string& common_name, X509* issuer, long serial) {
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert), -60);
  X509_gmtime_adj(X509_getm_notAfter(cert), 86400);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                             0);
  X509_set_issuer_name(cert, issuer != nullptr ? X509_get_subject_name(issuer) : name);
  return cert;
}

}  // namespace

TestCa::TestCa(const std::string& name) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  if (key == nullptr) throw std::runtime_error("cannot make a P-256 key");
  key_ = key;
  X509* cert = MakeCert(key, name, nullptr, 1);
  AddExtension(cert, cert, NID_basic_constraints, "critical,CA:TRUE");
  AddExtension(cert, cert, NID_key_usage, "critical,keyCertSign,cRLSign");
  AddExtension(cert, cert, NID_subject_key_identifier, "hash");
  X509_sign(cert, key, EVP_sha256());
  cert_ = CertPem(cert);
  X509_free(cert);
}

TestCa::~TestCa() { EVP_PKEY_free(static_cast<EVP_PKEY*>(key_)); }

PemPair TestCa::Issue(const std::string& common_name, const std::vector<std::string>& hosts) const {
  EVP_PKEY* ca_key = static_cast<EVP_PKEY*>(key_);
  BIO* bio = BIO_new_mem_buf(cert_.data(), static_cast<int>(cert_.size()));
  X509* ca = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  EVP_PKEY* key = EVP_EC_gen("P-256");
  static long serial = 100;
  X509* cert = MakeCert(key, common_name, ca, ++serial);
  AddExtension(cert, ca, NID_basic_constraints, "critical,CA:FALSE");
  AddExtension(cert, ca, NID_key_usage, "critical,digitalSignature,keyEncipherment");
  AddExtension(cert, ca, NID_ext_key_usage, "serverAuth,clientAuth");
  if (!hosts.empty()) {
    std::string san;
    for (const std::string& h : hosts) {
      const bool ip = h.find_first_not_of("0123456789.:") == std::string::npos;
      if (!san.empty()) san.push_back(',');
      san.append(ip ? "IP:" : "DNS:");
      san.append(h);
    }
    AddExtension(cert, ca, NID_subject_alt_name, san);
  }
  X509_sign(cert, ca_key, EVP_sha256());
  PemPair out{CertPem(cert), KeyPem(key)};
  X509_free(cert);
  X509_free(ca);
  EVP_PKEY_free(key);
  return out;
}

}  // namespace mltune::testing
