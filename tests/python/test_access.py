"""mltune.Client's TLS and token options against a real mltuned serving TLS (and mutual TLS) with
bearer tokens (docs/deployment.md): certificates from a CA made here with the openssl command."""

import os
import shutil
import subprocess
import tempfile
import unittest

import grpc
import mltune
from mltuned_process import MltunedProcess

SUBMIT_TOKEN = "submit-token-0123456789abcdef"
READ_TOKEN = "read-token-0123456789abcdef"
HLO = "HloModule m\n\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)\n}\n"


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_certificates(folder):
    """ca.pem; server.pem/.key for 127.0.0.1; client.pem/.key (P-256, one day)."""
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "ca.key", "-out", "ca.pem", "-days", "1", "-subj", "/CN=mltune test CA",
            cwd=folder)
    for name, extensions in (("server", "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                              "extendedKeyUsage=serverAuth\n"),
                             ("client", "extendedKeyUsage=clientAuth\n")):
        with open(os.path.join(folder, f"{name}.ext"), "w") as f:
            f.write(extensions)
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}",
                cwd=folder)
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", f"{name}.pem", "-days", "1", "-extfile",
                f"{name}.ext", cwd=folder)


@unittest.skipIf(shutil.which("openssl") is None, "no openssl command to make certificates")
class AccessTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory(prefix="mltune-access-test-")
        make_certificates(cls.dir.name)
        with open(cls.path("tokens"), "w") as f:
            f.write(f"ci {SUBMIT_TOKEN} submit,read\ndash {READ_TOKEN} read\n")
        tls = ["--tls-cert", cls.path("server.pem"), "--tls-key", cls.path("server.key"),
               "--tokens", cls.path("tokens")]
        cls.daemon = MltunedProcess(cls.path("tls"), tls)
        cls.mutual = MltunedProcess(cls.path("mutual"),
                                    tls + ["--tls-client-ca", cls.path("ca.pem")])

    @classmethod
    def path(cls, name):
        return os.path.join(cls.dir.name, name)

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()
        cls.mutual.stop()
        cls.dir.cleanup()

    def client(self, daemon=None, **options):
        return mltune.Client((daemon or self.daemon).address, timeout=10, **options)

    def test_tls_and_a_token_with_the_role(self):
        with self.client(ca=self.path("ca.pem"), token=SUBMIT_TOKEN) as client:
            submitted = client.submit(HLO, task="pass-order", target="cpu", budget=5)
            self.assertEqual(client.watch(submitted.job_id, progress=False).state, "done")

    def test_a_token_from_the_environment_with_its_newline(self):
        os.environ.update(MLTUNE_CA=self.path("ca.pem"), MLTUNE_TOKEN=READ_TOKEN + "\n")
        try:
            with self.client() as client:
                self.assertIn("version", client.stats())
        finally:
            del os.environ["MLTUNE_CA"], os.environ["MLTUNE_TOKEN"]

    def test_refusals_keep_the_daemons_words(self):
        with self.client(ca=self.path("ca.pem")) as client:
            with self.assertRaises(mltune.MltuneError) as e:
                client.stats()
            self.assertEqual(e.exception.code, grpc.StatusCode.UNAUTHENTICATED)
        with self.client(ca=self.path("ca.pem"), token=READ_TOKEN) as client:
            with self.assertRaises(mltune.MltuneError) as e:
                client.submit(HLO)
            self.assertEqual(e.exception.code, grpc.StatusCode.PERMISSION_DENIED)
            self.assertIn("token 'dash' lacks the role 'submit'", str(e.exception))
            client.wait_for_ready(10)

    def test_plaintext_against_tls_is_no_connection(self):
        with self.client(token=SUBMIT_TOKEN) as client:
            with self.assertRaises(mltune.Unreachable):
                client.stats()

    def test_mutual_tls_needs_the_client_certificate(self):
        with self.client(self.mutual, ca=self.path("ca.pem"), cert=self.path("client.pem"),
                         key=self.path("client.key"), token=READ_TOKEN) as client:
            self.assertIn("version", client.stats())
        with self.client(self.mutual, ca=self.path("ca.pem"), token=READ_TOKEN) as client:
            with self.assertRaises(mltune.Unreachable):
                client.stats()


if __name__ == "__main__":
    unittest.main()
