//! Since v4 the test root also holds the package managers of Amazon Linux, RHEL and
//! SUSE, as Debian packages them (`dnf`, `zypper`, `createrepo-c`, `python3-pip`,
//! `ruby`), each with a local source holding two versions of a tiny package, so
//! tests/init_package_managers.rs can install, pin, upgrade and ask the real managers:
//!
//! - `/srv/cfn-rpms`, made an rpm-md repository with createrepo_c: `cfn-tiny-rpm`
//!   1.0-1 (built by the v2 step) and 2.0-1, known to dnf as `/etc/yum.repos.d/cfn.repo`
//!   and to zypper as `/etc/zypp/repos.d/cfn.repo`. Debian's rpm keeps its database
//!   in `~/.rpmdb` while libzypp uses `/var/lib/rpm`; `/etc/rpm/macros` sets the latter
//!   so rpm, dnf and zypper share one database, as on an RPM distribution.
//! - `/srv/cfn-wheels`: `cfn-tiny-py` 1.0 and 2.0 wheels, the only index pip3 knows
//!   (`/etc/pip.conf`: `no-index`, `find-links`). Amazon Linux's python has no PEP 668
//!   marker, Debian's has; `break-system-packages` there lets `pip3 install` behave as
//!   on Amazon Linux.
//! - `/srv/cfn-gems`: `cfn-tiny-gem` 1.0 and 2.0 with a `gem generate_index` index, the
//!   only gem source (`/etc/gemrc`).
//!
//! Everything is built offline inside the root; only the Debian packages come from the
//! mirror.

use super::chroot;
use anyhow::Result;
use std::path::Path;
use std::time::Instant;

/// Installed from the mirror without their recommendations.
pub const PACKAGES: &str = "dnf zypper createrepo-c python3-pip ruby";

/// Installs the managers and builds their local sources in the root being built (whose
/// apt still knows the mirror).
pub fn add(root: &Path) -> Result<()> {
    let started = Instant::now();
    chroot(root, &format!("apt-get -q -y install --no-install-recommends {PACKAGES} >/dev/null"))?;
    chroot(root, &format!("{RPM_DB}{}{RPM_REPO}", super::tiny_rpm("2.0")))?;
    chroot(root, WHEELS)?;
    chroot(root, GEMS)?;
    eprintln!("xtask: package managers added to the root in {:.0} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// rpm's database where dnf and zypper read it; then cfn-tiny-rpm 2.0-1 is built beside
/// 1.0-1, and made a repository (below).
const RPM_DB: &str = r#"set -e
mkdir -p /etc/rpm
echo '%_dbpath /var/lib/rpm' > /etc/rpm/macros
rpm --initdb
"#;

/// The repository and the managers' configuration.
const RPM_REPO: &str = r#"createrepo_c --quiet /srv/cfn-rpms
mkdir -p /etc/yum.repos.d /etc/zypp/repos.d
printf '[cfn]\nname=cfn-bootstrap test packages\nbaseurl=file:///srv/cfn-rpms\ngpgcheck=0\nenabled=1\n' \
  > /etc/yum.repos.d/cfn.repo
printf '[cfn]\nname=cfn-bootstrap test packages\nbaseurl=dir:/srv/cfn-rpms\ntype=rpm-md\ngpgcheck=0\nenabled=1\nautorefresh=1\n' \
  > /etc/zypp/repos.d/cfn.repo
"#;

/// Two versions of a one-module wheel, and pip3 pointed at them alone.
const WHEELS: &str = r#"set -e
mkdir -p /srv/cfn-wheels
for v in 1.0 2.0; do
  d=/tmp/cfn-tiny-py-$v
  mkdir -p $d/cfn_tiny_py
  echo "VERSION = '$v'" > $d/cfn_tiny_py/__init__.py
  printf 'from setuptools import setup\nsetup(name="cfn-tiny-py", version="%s", packages=["cfn_tiny_py"])\n' $v > $d/setup.py
  (cd $d && python3 setup.py -q bdist_wheel -d /srv/cfn-wheels >/dev/null 2>&1)
  rm -rf $d
done
printf '[global]\nno-index = true\nfind-links = /srv/cfn-wheels\nbreak-system-packages = true\n' > /etc/pip.conf
"#;

/// Two versions of a one-file gem in a local gem source.
const GEMS: &str = r#"set -e
mkdir -p /srv/cfn-gems/gems
for v in 1.0 2.0; do
  d=/tmp/cfn-tiny-gem-$v
  mkdir -p $d/lib
  echo "CFN_TINY_GEM_VERSION = '$v'" > $d/lib/cfn_tiny_gem.rb
  cat > $d/cfn-tiny-gem.gemspec <<SPEC
Gem::Specification.new do |s|
  s.name = 'cfn-tiny-gem'
  s.version = '$v'
  s.summary = 'tiny gem for the cfn-bootstrap system tests'
  s.authors = ['cfn-bootstrap tests']
  s.homepage = 'https://localhost/'
  s.license = 'Apache-2.0'
  s.files = ['lib/cfn_tiny_gem.rb']
end
SPEC
  (cd $d && gem build -q cfn-tiny-gem.gemspec >/dev/null && mv cfn-tiny-gem-$v.gem /srv/cfn-gems/gems/)
  rm -rf $d
done
gem generate_index -q -d /srv/cfn-gems >/dev/null
printf -- '---\n:sources:\n- file:///srv/cfn-gems/\n' > /etc/gemrc
"#;
