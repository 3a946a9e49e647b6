"""Sample inputs for the shipped site configs: accounts they accept, host names of their login
nodes, and the default job script each site renders."""

from __future__ import annotations

from pathlib import Path

from gpujobqueue.plan.scripts import job_script_for

SITE_CONFIGS = Path(__file__).parent.parent / "site-configs"
SHIPPED = sorted(p.stem for p in SITE_CONFIGS.glob("[!_]*.yaml"))

# An account each site accepts, where the site requires one.
SAMPLE_ACCOUNTS = {
    "abci3": "gab12345",  # an ABCI group, written -P
    "alps": "g123",  # CSCS: "-A is always mandatory" (cscs-docs PR 382, 2026-04-22)
    "andes": "abc123",
    "anvil": "myallocation",
    "aurora": "MyProject",
    "besso": "g123",
    "beverin": "g123",
    "bristen": "g123",
    "betzy": "nn9999k",
    "casper": "UABC0001",
    "dardel": "naiss2026-5-123",  # PDC: "-A naissYYYY-X-XX", "The -A flag must be specified"
    "clariden": "g123",
    "delta": "bbka-delta-gpu",
    "deltaai": "bbka-dtai-gh",
    "derecho": "UABC0001",
    "expanse": "abc123",
    "frontier": "abc123",
    "gautschi": "mygroup",
    "juwels-booster": "mybudget",
    "jupiter-booster": "mybudget",  # JSC: a budget, as on JUWELS
    "kestrel": "abc123",
    "leibniz": "ap_medchem",  # UAntwerp: project accounts mandatory since 1 March 2024, all start with ap_
    "leonardo-booster": "EUHPC_A01_001",
    "lumi-g": "project_465000123",
    "marenostrum5-acc": "ehpc123",  # a EuroHPC project, as users' scripts give it
    "mindwell": "lp_myproject",
    "olivia": "nn9999k",
    "perlmutter": "m1234_g",
    "polaris": "MyProject",
    "santis": "g123",
    "roihu": "project_2001234",
    "setonix": "pawsey0001-gpu",
    "sophia": "MyProject",
    "summit": "ABC123",
    "tsubame4": "tga-lab",  # a TSUBAME group, written -g (optional: without it a 10-minute trial run)
    "vaughan": "ap_medchem",
    "wice": "lp_myproject",
}

# Host names of each machine's login nodes, short and fully qualified, as the centres' docs
# and users' job logs give them.  Sites without hostnames (generic ones, abci3) are never detected.
SAMPLE_HOSTNAMES = {
    "alps": ["daint-ln001", "daint-ln002.cscs.ch"],
    "anvil": ["login04.anvil.rcac.purdue.edu", "login06.anvil"],
    "aurora": ["aurora-uan-0009", "aurora-uan-0012.hostmgmt.cm.aurora.alcf.anl.gov"],
    "bridges2": ["br012.ib.bridges2.psc.edu"],
    "casper": ["casper-login1", "casper-login2.hpc.ucar.edu"],
    "clariden": ["clariden-ln003", "clariden-ln001.cscs.ch"],
    "delta": ["dt-login03.delta.ncsa.illinois.edu", "dt-login01", "login.delta.ncsa.illinois.edu"],
    "derecho": ["derecho5", "derecho1.hsn.de.hpc.ucar.edu"],
    "expanse": ["login01.expanse.sdsc.edu", "login02.expanse.sdsc.edu"],
    "frontera": ["login2.frontera.tacc.utexas.edu", "login4.frontera.tacc.utexas.edu"],
    "frontier": ["login05.frontier.olcf.ornl.gov", "login11.frontier"],
    "juwels-booster": ["jwlogin22", "jwlogin24.juwels"],
    "leonardo-booster": [
        "login01-ext.leonardo.cineca.it",
        "login07-ext.leonardo.cineca.it",
        "login.leonardo.cineca.it",
    ],
    "leibniz": ["login1-leibniz.hpc.uantwerpen.be", "login2.leibniz.antwerpen.vsc"],
    "lonestar6": ["login1.ls6.tacc.utexas.edu", "login3.ls6.tacc.utexas.edu"],
    "lumi-g": ["lumi-uan01.csc.fi", "lumi-uan04"],
    "perlmutter": ["login01.chn.perlmutter.nersc.gov", "login31.chn.perlmutter.nersc.gov"],
    "polaris": ["polaris-login-02", "polaris-login-04.hsn.cm.polaris.alcf.anl.gov"],
    # "two login nodes, santis-ln00[1,2]" (docs.cscs.ch as built on or after 2026-09-17)
    "santis": ["santis-ln001", "santis-ln002.cscs.ch"],
    "sophia": ["sophia-login-01", "sophia-login-02.alcf.anl.gov"],
    "stampede3": ["login1.stampede3.tacc.utexas.edu", "login4.stampede3.tacc.utexas.edu"],
    "summit": ["login1.summit.olcf.ornl.gov"],
    "tsubame4": ["login1.t4.gsic.titech.ac.jp", "login2.t4.cii.isct.ac.jp"],
    "vaughan": ["login-vaughan.hpc.uantwerpen.be", "login1.vaughan.antwerpen.vsc"],
    "vista": ["login1.vista.tacc.utexas.edu", "login2.vista.tacc.utexas.edu"],
}

# Machines gpujobqueue has no site for, or names that only look like a known one's.
UNRELATED_HOSTNAMES = [
    "localhost",
    "my-laptop",
    "login01",
    "login1",
    "nid001234",
    "jwlogin05",  # JUWELS Cluster, not the Booster
    "daint-ln005",
    "santis-ln005",
    "casper-login1.example.com",
    "login1.stampede2.tacc.utexas.edu",
    "sophia-login",
    "login1.ls5.tacc.utexas.edu",
    "login08.anvil.rcac.purdue.edu",  # Anvil has login00-login07
    "derecho",
    "polaris-login-02.evil.example",
    "login01.perlmutter.nersc.gov.example",
    "ip-10-0-0-12.ec2.internal",
    "summit",
    "frontier",
    "dt-login03.delta.ncsa.illinois.edu.attacker",
]


def site_keywords(name: str) -> dict:
    """The keywords of a site's default job: half an hour, and an account where one is required
    (``python3`` stands in for the login node's interpreter, which would be a path of this machine)."""
    keywords = {"walltime": "00:30:00", "python": "python3"}
    if name in SAMPLE_ACCOUNTS:
        keywords["account"] = SAMPLE_ACCOUNTS[name]
    return keywords


def site_job_script(name: str) -> str:
    """The job script a site renders for its default queue and job."""
    return job_script_for(name, site_keywords(name), name="w", scheduler="tls://10.0.0.1:8786")
